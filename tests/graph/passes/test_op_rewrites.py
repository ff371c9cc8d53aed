"""rewrite_for_onnx on real TensorFlow graphs: Erfc becomes 1 - Erf and computes the same."""

from __future__ import annotations

import numpy as np
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.op_rewrites import rewrite_for_onnx
from graphfreeze.graph.session import run_graph_def

X = np.concatenate([np.linspace(-6, 6, 241), [0.0, -0.0, 1e-8, -30.0, 30.0]]).astype(np.float32)


def _graph(in_function: bool):
    import tensorflow as tf

    @tf.function
    def body(x):
        return tf.math.erfc(x) * 2.0

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        y = body(x) if in_function else tf.math.erfc(x, name="erfc") * 2.0
        tf.identity(y, name="y")
    return graph.as_graph_def()


def test_erfc_becomes_one_minus_erf_and_matches_tensorflow():
    graph_def = _graph(in_function=False)
    before = graph_def.SerializeToString()
    out = rewrite_for_onnx(graph_def, ["y"]).graph_def
    assert graph_def.SerializeToString() == before  # not owned: the caller's graph untouched
    assert "Erfc" not in op_counts(out) and op_counts(out)["Erf"] == 1
    assert {n.name: n.op for n in out.node}["erfc"] == "Sub"  # consumers keep their input
    (want,) = run_graph_def(graph_def, {"x:0": X}, ["y:0"])
    (got,) = run_graph_def(out, {"x:0": X}, ["y:0"])
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-7)  # 1 - Erf: 2 ulps of 1, absolute


def test_erfc_inside_a_function_body_is_rewritten_too():
    graph_def = _graph(in_function=True)
    assert op_counts(graph_def, functions=True).get("Erfc") == 1
    out, changed = rewrite_for_onnx(graph_def, ["y"], owned=True)
    assert out is graph_def and changed  # edited in place: only the pass can say it changed it
    assert "Erfc" not in op_counts(out, functions=True)
    (got,) = run_graph_def(out, {"x:0": X}, ["y:0"])
    (want,) = run_graph_def(_graph(in_function=True), {"x:0": X}, ["y:0"])
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-7)  # 1 - Erf: 2 ulps of 1, absolute


def test_a_graph_without_erfc_is_returned_as_is():
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.identity(tf.math.erf(tf.compat.v1.placeholder(tf.float32, [2], name="x")), name="y")
    graph_def = graph.as_graph_def()
    out, changed = rewrite_for_onnx(graph_def, ["y"])
    assert out is graph_def and not changed
