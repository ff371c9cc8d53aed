"""A composite function called inside a loop body (TensorFlow's padded NMS in a tf.map_fn) stays a
call (freezing and `inline_calls`) until inlined on purpose for a target without its op; then it
is inlined in the body itself (tf2onnx's Loop translates bodies op by op)."""

from __future__ import annotations

import numpy as np


def _frozen(implements: str):
    """A tf.map_fn (a While) whose body calls an inner tf.function, frozen as sources do."""
    import tensorflow as tf
    from graphfreeze.sources.functions import freeze_function

    @tf.function(experimental_implements=implements)
    def inner(row):
        return tf.nn.relu(row) * 2.0 + 1.0

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def outer(x):
        return {"y": tf.map_fn(inner, x)}

    return freeze_function(outer.get_concrete_function(), ["x"], ["y"])


def _calls(graph_def) -> list[str]:
    return [n.op for f in graph_def.library.function for n in f.node_def
            if n.op.endswith("PartitionedCall")]


def _run(graph_def):
    from graphfreeze.graph.session import run_graph_def

    x = np.array([[-1.0, 0.5, 2.0], [3.0, -4.0, 0.0]], np.float32)
    return run_graph_def(graph_def, {"x:0": x}, ["y:0"])[0]


def test_a_composite_stays_a_call_until_inlined_on_purpose():
    from graphfreeze.graph.composites import composite_calls
    from graphfreeze.graph.passes.calls import inline_calls, inline_composites

    graph_def = _frozen("my_scaled_relu")
    kept = inline_calls(graph_def, ["y", "x"]).graph_def
    (call,) = composite_calls(kept)
    assert call.implements == "my_scaled_relu" and call.inside and not call.stand_in
    inlined = inline_composites(kept, ["y", "x"]).graph_def
    assert not composite_calls(inlined) and not _calls(inlined)
    np.testing.assert_allclose(_run(inlined), _run(graph_def))


def test_a_body_whose_calls_read_each_other_freezes_from_its_folder(tmp_path):
    """models/chains.py's nested_calls: a function whose body chains three calls (each reads the
    one before, `c0:output:0`), frozen by the `freeze` command in its folder and verified; the
    inliner once kept the second call as it was before the first was inlined (a KeyError)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import _run as build

    build("chains.py", tmp_path, "--sizes", "3", "--kinds", "nested_calls")
    done = subprocess.run([str(Path(sys.executable).with_name("freeze")), "nested_calls_3.pb",
                           "--outputs", "output", "-o", "frozen.pb"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "frozen.pb.json").read_text())["verification"]["passed"]
    from graphfreeze.proto.tf import graph_pb2

    frozen = graph_pb2.GraphDef.FromString((tmp_path / "frozen.pb").read_bytes())
    assert [n.op for n in frozen.node].count("Neg") == 3 and not frozen.library.function


def test_control_edges_on_an_inlined_call_move_to_its_result(tmp_path):
    """models/chains.py's nested_calls with two calls (`c1` reads `c0:output:0`), a body node
    waiting on `c1` and a control result naming `c0`: each waits on what the call became."""
    from graphfreeze.graph.passes.nested_calls import inline_nested
    from graphfreeze.proto.tf import graph_pb2

    from tests.conftest import _run as build

    build("chains.py", tmp_path, "--sizes", "2", "--kinds", "nested_calls")
    graph = graph_pb2.GraphDef.FromString((tmp_path / "nested_calls_2.pb").read_bytes())
    chain = {f.signature.name: f for f in graph.library.function}["chain"]
    chain.node_def.add(name="wait", op="NoOp", input=["^c1"])
    chain.signature.control_output.append("done")
    chain.control_ret["done"] = "c0"
    out = {f.signature.name: f for f in inline_nested(graph).graph_def.library.function}["chain"]
    inputs = {n.name: list(n.input) for n in out.node_def}
    assert inputs == {"wait": ["^c1/inlined/neg"], "c0/inlined/neg": ["a"],
                      "c1/inlined/neg": ["c0/inlined/neg:y:0"]}
    assert out.ret["y"] == "c1/inlined/neg:y:0" and out.control_ret["done"] == "c0/inlined/neg"
