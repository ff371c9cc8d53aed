"""TensorFlow's C API session: the numbers, types and refusals of `tf.compat.v1.Session` with
`lean_config`, without `import tensorflow`; what it cannot run raises Unsupported (and
`run_graph_def` then runs it in TensorFlow's Python API)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from graphfreeze.graph import c_session
from graphfreeze.graph.session import run_graph_def


def _python_run(graph_def, feeds: dict, fetches: list[str]) -> list:
    import tensorflow as tf
    from graphfreeze.graph.session import import_graph, lean_config

    with tf.compat.v1.Session(graph=import_graph(graph_def), config=lean_config()) as sess:
        return sess.run(fetches, feeds)


def _small_graph():
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        flag = tf.compat.v1.placeholder_with_default(False, [], name="flag")
        tf.reduce_sum(x * 2.0, name="total")
        tf.where(flag, x, -x, name="signed")
        tf.greater(x, 1.0, name="above")
        tf.cast(x, tf.int64, name="whole")
        tf.strings.as_string(x, name="text")
    return graph.as_graph_def()


def test_the_lean_config_is_what_it_says():
    import tensorflow as tf
    from graphfreeze.graph.c_session import LEAN_CONFIG

    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_function_inlining = True
    config.experimental.optimize_for_static_graph = True
    assert LEAN_CONFIG == config.SerializeToString(deterministic=True)


def test_without_the_library_python_runs_it(monkeypatch):
    """Where TensorFlow's C library cannot be loaded (another platform's file names), every
    run is the Python API's, with the same answer."""
    from graphfreeze.graph import c_library

    graph_def = _small_graph()
    feeds = {"x:0": np.ones((1, 3), np.float32)}
    monkeypatch.setattr(c_library, "_LOADED", [None])
    with pytest.raises(c_session.Unsupported, match="not loadable"):
        c_session.run(graph_def, feeds, ["total:0"])
    assert run_graph_def(graph_def, feeds, ["total:0"]) == [6.0]


def test_values_dtypes_and_scalars_are_the_python_sessions():
    graph_def = _small_graph()
    feeds = {"x:0": np.arange(6, dtype=np.float64).reshape(2, 3), "flag:0": True}
    fetches = ["total:0", "signed:0", "above:0", "whole:0"]
    got, want = c_session.run(graph_def, feeds, fetches), _python_run(graph_def, feeds, fetches)
    for g, w in zip(got, want, strict=True):
        assert type(g) is type(w) and g.dtype == w.dtype  # a scalar is a numpy scalar
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize(("feeds", "fetches", "why"), [
    ({"x:0": np.zeros((2, 4), np.float32)}, ["total:0"], "another shape"),
    ({}, ["total:0"], "must feed a value for placeholder"),
    ({"x:0": np.zeros((2, 3), np.float32)}, ["nowhere:0"], "no operation"),
    ({"x:0": np.zeros((2, 3), np.float32)}, ["total:1"], "no tensor"),
])
def test_an_error_is_unsupported_and_python_says_it(feeds, fetches, why):
    import tensorflow as tf

    graph_def = _small_graph()
    with pytest.raises(c_session.Unsupported, match=why):
        c_session.run(graph_def, feeds, fetches)
    with pytest.raises((ValueError, KeyError, tf.errors.OpError)):
        run_graph_def(graph_def, feeds, fetches)  # TensorFlow's Python API, in its words


def test_strings_are_left_to_python():
    graph_def = _small_graph()
    feeds = {"x:0": np.ones((1, 3), np.float32)}
    with pytest.raises(c_session.Unsupported, match="not numeric"):
        c_session.run(graph_def, feeds, ["text:0"])
    (text,) = run_graph_def(graph_def, feeds, ["text:0"])
    assert text.tolist() == [[b"1.000000"] * 3]


def test_a_sample_frozen_graph_runs_as_in_python(samples, tmp_path):
    """cnn_v2 frozen to android by the CLI: the C API run, with its weights fed as verification
    runs it, is the Python session's, bit for bit."""
    from graphfreeze.graph.skeleton import skeleton, weight_arrays
    from graphfreeze.proto.tf import graph_pb2

    out = tmp_path / "model.pb"
    subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "--ckpt",
                    str(samples / "cnn_v2" / "model.ckpt-200"), "--outputs", "probs", "-o",
                    str(out), "--no-verify"], check=True, capture_output=True)
    graph_def = graph_pb2.GraphDef.FromString(out.read_bytes())
    rows = np.random.default_rng(0).standard_normal((4, 16, 16, 3)).astype(np.float32)
    feeds = {"images:0": rows, **weight_arrays(graph_def)}
    got = c_session.run(skeleton(graph_def), feeds, ["probs:0"])
    np.testing.assert_array_equal(got[0], _python_run(graph_def, {"images:0": rows},
                                                      ["probs:0"])[0])


def test_it_runs_without_importing_tensorflow():
    program = ("import sys, numpy as np\n"
               "from graphfreeze.graph import c_session\n"
               "from graphfreeze.proto.tf import graph_pb2\n"
               "g = graph_pb2.GraphDef.FromString(bytes.fromhex(sys.argv[1]))\n"
               "out = c_session.run(g, {'x:0': np.ones((1, 3), np.float32)}, ['total:0'])\n"
               "assert 'tensorflow' not in sys.modules\n"
               "print(float(out[0]))\n")
    done = subprocess.run([sys.executable, "-c", program,
                           _small_graph().SerializeToString().hex()],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "6.0"


def test_feeds_are_converted_as_the_client_converts_them():
    """A list fed to a uint8 tensor wraps as numpy's astype wraps it (the client's
    `np_asarray`), floats are truncated; a value numpy cannot convert is left to Python."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.identity(tf.compat.v1.placeholder(tf.uint8, [2], name="b"), name="out")
    graph_def = graph.as_graph_def()
    for value in ([300, 1], [1.7, -1.2]):
        (got,) = c_session.run(graph_def, {"b:0": value}, ["out:0"])
        np.testing.assert_array_equal(got, _python_run(graph_def, {"b:0": value}, ["out:0"])[0])
    with pytest.raises(c_session.Unsupported, match="feed b:0"):
        c_session.run(graph_def, {"b:0": ["x", "y"]}, ["out:0"])


def test_a_closed_session_runs_nothing():
    with c_session.Session.of_graph(_small_graph()) as session:
        assert session.run({"x:0": np.ones((1, 3), np.float32)}, ["total:0"]) == [6.0]
    with pytest.raises(c_session.Unsupported, match="closed"):
        session.run({"x:0": np.ones((1, 3), np.float32)}, ["total:0"])
