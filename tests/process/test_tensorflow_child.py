"""The run's TensorFlow child: a checkpoint frozen for android or openvino by the `freeze`
command imports no TensorFlow in its own process, and writes what a process with TensorFlow
writes; calls, protos and errors round-trip; the import check's error is the same line from the
child."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from graphfreeze.errors import InputError
from graphfreeze.process import tensorflow_child
from graphfreeze.process.tensorflow_child import Child
from graphfreeze.proto.tf import graph_pb2

FREEZE = str(Path(sys.executable).with_name("freeze"))


def test_calls_protos_and_errors_round_trip():
    from graphfreeze.graph.checks.validate import check_graph_def
    from graphfreeze.graph.graphdefs import op_counts

    child = Child()
    try:
        graph_def = graph_pb2.GraphDef()
        graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
        assert child.submit(math.sqrt, 16.0).result() == 4.0
        assert child.submit(op_counts, graph_def).result() == op_counts(graph_def)
        graph_def.node.add(name="y", op="NoSuchOp")
        with pytest.raises(InputError, match="model.pb.*NoSuchOp"):
            child.submit(check_graph_def, graph_def, "model.pb").result()
        assert child.submit(math.sqrt, 9.0).result() == 3.0  # still serving after an error
    finally:
        child.close()


def test_a_big_call_is_sent_without_copies():
    """A 64 MB argument (a graph's size) costs this process its pickle once: not the pickle, a
    copy of it and that copy pickled again (3x)."""
    from tests.peak_rss import growth_kib

    child = Child()
    try:
        payload = bytes(64 << 20)
        with growth_kib() as grown:
            assert child.submit(len, payload).result() == len(payload)
            assert grown() < 1.5 * 64 * 1024, grown()
    finally:
        child.close()


def test_no_child_once_tensorflow_is_imported_here():
    import tensorflow  # noqa: F401

    memo: dict = {}
    tensorflow_child.start(memo)
    assert not tensorflow_child.running(memo)
    assert tensorflow_child.call(memo, math.sqrt, 4.0) == 2.0


@pytest.mark.parametrize(("name", "target", "suffix"), [
    ("cnn_v2", "android", ".pb"), ("iris_partitioned", "android", ".pb"),
    ("iris", "android", ".pb"),  # (constants to fold: the child computes them)
    ("cnn_v2", "openvino", ".xml")])
def test_a_checkpoint_without_tensorflow_here(sample, freeze_noted, name, target, suffix):
    """In the model's folder, relative paths, verification on: TensorFlow only in the child
    (OpenVINO's frontend reads the frozen graph as a file, its runtime runs here); the artifact
    and its sidecar are those of a run in a process that imported TensorFlow first."""
    model_dir = sample(name)
    args = ("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", target)
    done, noted = freeze_noted(model_dir, *args, "-o", "model" + suffix)
    assert done.returncode == 0, done.stderr
    assert noted == {"tensorflow": name == "iris_partitioned",  # (sliced: RestoreV2 here)
                     "children": 1, "python_in_child": False}  # (its C API ran the runs)
    sidecar = json.loads((model_dir / f"model{suffix}.json").read_text())
    assert sidecar["verification"]["passed"]
    (model_dir / "here").mkdir()
    done, noted = freeze_noted(model_dir, *args, "-o", "here/model" + suffix, "--with-tensorflow")
    assert done.returncode == 0 and noted == {"tensorflow": True, "children": 0,
                                              "python_in_child": False}, done.stderr
    for part in {".pb": [".pb"], ".xml": [".xml", ".bin"]}[suffix]:
        assert (model_dir / f"here/model{part}").read_bytes() == \
            (model_dir / f"model{part}").read_bytes()
    assert json.loads((model_dir / f"here/model{suffix}.json").read_text()) == sidecar


@pytest.mark.parametrize(("name", "relu_as", "children"), [
    ("cnn_v2", None, 0), ("cnn_v1", None, 0), ("cnn_v2", "Atan", 1), ("iris", None, 1)])
def test_no_verify_starts_a_child_only_for_what_graph_shapes_cannot_do(sample, freeze_noted,
                                                                       name, relu_as, children):
    """Every op of cnn_v2 (Keras BatchNorm Ifs) and cnn_v1 (v1 conds) has a shape function in
    graph/shapes: checked and shaped here, no TensorFlow anywhere. With a Relu made an Atan
    (none there) a child does that part, with TensorFlow's C importer; so it does iris's
    constants to fold (the `make demo` model), with its C API. The bytes are those of a process
    that imported TensorFlow first."""
    from graphfreeze.proto.tf import meta_graph_pb2

    model_dir = sample(name)
    if relu_as:
        path = model_dir / "model.ckpt-200.meta"
        meta = meta_graph_pb2.MetaGraphDef.FromString(path.read_bytes())
        next(n for n in meta.graph_def.node if n.op == "Relu").op = relu_as
        path.write_bytes(meta.SerializeToString())
    args = ("--ckpt", "model.ckpt-200", "--outputs", "probs", "--no-verify")
    done, noted = freeze_noted(model_dir, *args, "-o", "model.pb")
    assert done.returncode == 0, done.stderr
    assert noted == {"tensorflow": False, "children": children, "python_in_child": False}
    (model_dir / "here").mkdir()
    done, noted = freeze_noted(model_dir, *args, "-o", "here/model.pb", "--with-tensorflow")
    assert done.returncode == 0 and noted["tensorflow"] and not noted["children"], done.stderr
    for name in ("model.pb", "model.pb.json"):
        assert (model_dir / "here" / name).read_bytes() == (model_dir / name).read_bytes()


@pytest.mark.parametrize("verify", [[], ["--no-verify"]])
def test_a_graph_tensorflow_cannot_import_is_the_same_line(sample, verify):
    from tensorflow.core.protobuf import meta_graph_pb2

    model_dir = sample("cnn_v2")
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString((model_dir / "model.ckpt-200.meta").read_bytes())
    identity = next(n for n in meta.graph_def.node
                    if n.name == "sequential/batch_normalization_1/cond/Identity")
    identity.attr["T"].type = 3  # int32 fed a float
    (model_dir / "model.ckpt-200.meta").write_bytes(meta.SerializeToString())
    done = subprocess.run([FREEZE, "--ckpt", "model.ckpt-200", "--outputs", "probs", *verify],
                          cwd=model_dir, capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 3 and len(lines) == 1, done.stderr
    assert "TensorFlow cannot import the graph" in lines[0] and identity.name in lines[0]
    assert not list(model_dir.glob("*.pb*"))


def test_a_child_that_died_fails_every_call_at_once(monkeypatch):
    import time

    monkeypatch.setattr(tensorflow_child, "_MAIN", "import sys; sys.exit(1)")
    child = Child()
    try:
        time.sleep(1)  # gone before the first call is sent
        for _ in range(2):
            with pytest.raises(RuntimeError, match=r"child process ended \(exit 1\)"):
                child.submit(math.sqrt, 4.0).result(timeout=30)
    finally:
        child.close()


def test_close_does_not_wait_for_the_import():
    child = Child()
    pending = child.submit(math.sqrt, 4.0)  # written while the child still imports TensorFlow
    child.close()
    assert child._process.returncode == -signal.SIGKILL  # killed while importing, not awaited
    with pytest.raises(RuntimeError, match="ended"):
        pending.result(timeout=30)


def test_the_graphs_run_without_the_python_api_until_a_call_needs_it(samples):
    """A child runs the original through TensorFlow's C API, with the numbers of a run here,
    and checks the graph with its C importer; a graph the C API does not run (a string fetch)
    then imports TensorFlow's Python API there."""
    import numpy as np
    from graphfreeze.graph.checks.validate_values import check_import
    from graphfreeze.graph.inputs import inference_subgraph
    from graphfreeze.graph.session import run_graph_def
    from graphfreeze.sources.checkpoint import CheckpointModel

    model = CheckpointModel(str(samples / "cnn_v2" / "model.ckpt-200"))
    graph_def = inference_subgraph(model.graph_def, ["probs"], [])
    feeds = {"images:0": np.random.default_rng(0).standard_normal((2, 16, 16, 3), np.float32)}
    text = graph_pb2.GraphDef()
    text.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    text.node.add(name="text", op="AsString", input=["x"]).attr["T"].type = 1
    child = Child()
    try:
        got = child.submit(model.run_reference, graph_def, feeds, ["probs:0"]).result()
        child.submit(check_import, graph_def, "model.ckpt-200.meta").result()
        assert child.submit(tensorflow_child.python_imported).result() is False
        np.testing.assert_array_equal(got[0], model.run_reference(graph_def, feeds,
                                                                  ["probs:0"])[0])
        (strings,) = child.submit(run_graph_def, text, {"x:0": np.float32(2)}, ["text:0"]).result()
        assert strings == b"2.000000" and child.submit(tensorflow_child.python_imported).result()
    finally:
        child.close()


def test_two_calls_importing_tensorflow_at_once_do_not_deadlock():
    """One call imports `tensorflow`, the other a submodule first: without one lock over the
    first import, Python's import system deadlocks (it raised _DeadlockError in one of them)."""
    from graphfreeze.graph.session import lean_config
    from graphfreeze.proto.snapshot import op_list_bytes

    for _ in range(2):
        child = Child()
        try:
            calls = [child.submit(lean_config), child.submit(op_list_bytes)]
            assert calls[0].result(timeout=120) and calls[1].result(timeout=120)
        finally:
            child.close()


def test_two_first_calls_importing_numpy_at_once_both_run():
    """A call whose function's module imports numpy and one whose arguments are arrays, the
    first two of a fresh child: both threads imported numpy at once, and one got a half-made
    numpy (ImportError "... from partially initialized module 'numpy._core...'", 3 children in
    15; `freeze` of a frozen graph failed so ~1 run in 10 as an internal error). The child now
    imports numpy before it takes calls."""
    import operator

    import numpy as np
    from graphfreeze.graph.consts import node_value
    from graphfreeze.proto.tf import node_def_pb2

    node = node_def_pb2.NodeDef(name="c", op="Const")
    node.attr["dtype"].type = node.attr["value"].tensor.dtype = 1
    node.attr["value"].tensor.float_val.append(2.0)
    for _ in range(6):
        child = Child()
        try:
            assert child.submit(tensorflow_child.imported, "numpy").result(timeout=120)
            calls = [child.submit(node_value, node), child.submit(operator.add, np.ones(3), 1)]
            assert calls[0].result(timeout=120) == 2.0
            assert calls[1].result(timeout=120).tolist() == [2.0, 2.0, 2.0]
        finally:
            child.close()
