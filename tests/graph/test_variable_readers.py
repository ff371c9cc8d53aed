"""The variables' readers converted without TensorFlow are TensorFlow's converter's, byte for
byte, on the checkpoints the tests build (ref and resource variables, partitioned, If branches,
v1 control flow): other sources give graphs without variable nodes."""

import pytest
from graphfreeze.graph import variables
from graphfreeze.graph.ops import VARIABLE_OPS
from graphfreeze.graph.variable_readers import frozen_names, rewired
from graphfreeze.registry import Registry
from graphfreeze.sources.detect import source_for

CHECKPOINTS = ["iris", "iris_resource", "iris_partitioned", "cnn_v1", "cnn_v2"]


def _graph(path):
    registry = Registry.default()
    source, options = source_for(str(path), "auto", {}, registry)
    return source.load(str(path), options, unsafe=False).graph_def


def _both(graph_def):
    """(ours or None, TensorFlow's) of the whole graph, the constants' stand-in values cleared."""
    dtypes = {n.name: n.attr["dtype"].type for n in graph_def.node if n.op in VARIABLE_OPS}
    assert dtypes
    ours = rewired(variables._copy(graph_def), dtypes)
    theirs = variables._tensorflow_rewired(variables._copy(graph_def), dtypes)
    for node in theirs.node:
        if node.name in dtypes:
            node.attr["value"].tensor.Clear()
            node.attr["value"].tensor.dtype = dtypes[node.name]
    return ours, theirs


def _same(ours, theirs):
    assert ours is not None
    assert ours.SerializeToString(deterministic=True) == \
        theirs.SerializeToString(deterministic=True)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_checkpoints(samples, name):
    ours, theirs = _both(_graph(samples / name))
    _same(ours, theirs)


def test_keras_cond_branches_are_converted_and_renamed(samples):
    """cnn_v2's BatchNorm conds take the moving averages' handles into If branches."""
    graph_def = _graph(samples / "cnn_v2")
    ours, _ = _both(graph_def)
    renamed = {f.signature.name for f in ours.library.function} - \
        {f.signature.name for f in graph_def.library.function}
    assert renamed and all("_frozen_" in name for name in renamed)


def test_a_while_loop_is_left_to_tensorflow():
    from graphfreeze.proto.tf import function_pb2, graph_pb2

    graph_def = graph_pb2.GraphDef()
    var = graph_def.node.add(name="v", op="VarHandleOp")
    var.attr["dtype"].type = 1
    loop = graph_def.node.add(name="loop", op="While", input=["v"])
    loop.attr["body"].func.name = "body"
    graph_def.library.function.add().CopyFrom(function_pb2.FunctionDef())
    assert rewired(graph_def, {"v": 1}) is None


def test_frozen_names_number_the_library_in_order():
    assert frozen_names(["b_2", "a", "b_1", "c_x"]) == {
        "a": "a_frozen_0", "c_x": "c_x_frozen_1", "b_1": "b_frozen_2", "b_2": "b_frozen_3"}


@pytest.mark.parametrize("name", ["cnn_v1", "cnn_v2"])  # (iris folds constants: TensorFlow)
def test_a_checkpoint_freezes_without_tensorflow_as_with_it(samples, name):
    """Read, converted, inlined, folded and checked without TensorFlow: the same bytes as in a
    process where TensorFlow answers (its op registry, the same code otherwise)."""
    import subprocess
    import sys
    from pathlib import Path

    import tensorflow  # noqa: F401 -- this process is the one with TensorFlow

    from .floor_freeze import frozen_sha

    script = Path(__file__).with_name("floor_freeze.py")
    prefix = str(samples / name / "model.ckpt-200")
    floor = subprocess.run([sys.executable, str(script), prefix, "probs", "--no-tensorflow"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert floor == frozen_sha(prefix, "probs")
