"""The variables' readers converted without TensorFlow are TensorFlow's converter's, byte for
byte, on the checkpoints the tests build (ref and resource variables, partitioned, If branches,
v1 control flow): other sources give graphs without variable nodes."""

import pytest
from graphfreeze.graph import variables
from graphfreeze.graph.graphdefs import copied
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
    ours = rewired(copied(graph_def), dtypes)
    theirs = variables._tensorflow_rewired(copied(graph_def), dtypes)
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


@pytest.mark.parametrize("order", [["v1", "v2"], ["v2", "v1"]])
def test_a_read_inside_a_function_feeding_a_call(order):
    """F reads v1's handle and passes the value to a call of G, which reads v2's handle: the
    converter renames the call's function only if G was renamed before it first edited it."""
    from graphfreeze.proto.tf import graph_pb2

    resource, float32 = 20, 1
    graph_def = graph_pb2.GraphDef()
    for name in order:
        graph_def.node.add(name=name, op="VarHandleOp").attr["dtype"].type = float32

    def call(nodes, name, inputs, function, types):
        node = nodes.add(name=name, op="StatefulPartitionedCall", input=inputs)
        node.attr["f"].func.name = function
        node.attr["Tin"].list.type.extend(types)
        node.attr["Tout"].list.type.append(float32)

    def function(name, args, reads, ret):
        f = graph_def.library.function.add()
        f.signature.name = name
        for arg, dtype in args:
            f.signature.input_arg.add(name=arg, type=dtype)
        f.signature.output_arg.add(name=ret[0], type=float32)
        f.node_def.add(name=reads[0], op="ReadVariableOp", input=[reads[1]]).attr[
            "dtype"].type = float32
        f.ret[ret[0]] = ret[1]
        return f

    call(graph_def.node, "P", ["v1", "v2"], "F", [resource, resource])
    f = function("F", [("h1", resource), ("h2", resource)], ("r", "h1"), ("out", "c:output:0"))
    call(f.node_def, "c", ["r:value:0", "h2"], "G", [float32, resource])
    g = function("G", [("x", float32), ("h", resource)], ("r2", "h"), ("y", "y:z:0"))
    g.node_def.add(name="y", op="AddV2", input=["x", "r2:value:0"]).attr["T"].type = float32
    _same(*_both(graph_def))


@pytest.fixture(scope="session")
def loops(tmp_path_factory):
    """loops(name) -> (SavedModel path, args): one models/loops.py model, built on first use."""
    from tests.conftest import _shared, _zoo_builder

    return _zoo_builder(_shared(tmp_path_factory, "loops"), "loops.py")


def _converted(path):
    """(the loaded model, its serving signature, TensorFlow's converter's graph of it, the
    indices it froze)."""
    import tensorflow as tf
    from tensorflow.python.framework import convert_to_constants as c2c

    model = tf.saved_model.load(str(path))  # (it holds the variables the signature reads)
    func = model.signatures["serving_default"]
    data = c2c._FunctionConverterDataInEager(func=func, lower_control_flow=False,
                                             aggressive_inlining=False)
    return (model, func, *c2c._replace_variables_by_constants(converter_data=data))


def _ops(graph_def) -> set[str]:
    return {n.op for n in graph_def.node} | {n.op for f in graph_def.library.function
                                              for n in f.node_def}


def test_a_gather_in_a_loop_body_reads_the_value(loops):
    """The greedy decoder gathers its embedding inside the While body: TensorFlow's converter
    types the body's argument float and leaves the ResourceGather reading it (it skips gathers
    in functions); finished, the body gathers the value and the frozen graph decodes as the
    model does."""
    import numpy as np
    import tensorflow as tf
    from graphfreeze.graph.variable_readers import finish_readers
    from tensorflow.python.framework import convert_to_constants as c2c

    _model, func, graph_def, indices = _converted(loops("greedy_decoder")[0])
    assert "ResourceGather" in _ops(graph_def)
    finish_readers(graph_def)
    assert "ResourceGather" not in _ops(graph_def) and "GatherV2" in _ops(graph_def)
    frozen = c2c._construct_concrete_function(func, graph_def, indices)
    start = tf.constant([1, 5], tf.int32)
    state = tf.constant(np.random.default_rng(0).standard_normal((2, 8)), tf.float32)
    want = func(start=start, state=state)
    got = dict(zip(sorted(want), frozen(start, state), strict=True))  # outputs sorted by key
    for key, value in want.items():
        np.testing.assert_allclose(got[key].numpy(), value.numpy(), rtol=1e-5, atol=1e-6)


def test_an_assign_to_a_frozen_variable_is_dropped(loops):
    """A BatchNormalization called in training mode assigns its moving statistics: TensorFlow's
    converter leaves each AssignVariableOp taking the float value (a graph TensorFlow refuses);
    finished, the assigns are gone and the graph imports."""
    import tensorflow as tf
    from graphfreeze.graph.variable_readers import finish_readers

    _, _, graph_def, _ = _converted(loops("training_batch_norm")[0])
    assert "AssignVariableOp" in _ops(graph_def)
    with pytest.raises(ValueError, match="AssignVariableOp"):
        with tf.Graph().as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
    finish_readers(graph_def)
    assert not _ops(graph_def) & {"AssignVariableOp", "AssignAddVariableOp",
                                   "AssignSubVariableOp"}
    with tf.Graph().as_default():
        tf.graph_util.import_graph_def(graph_def, name="")


def test_a_resource_gather_of_a_resource_is_left_alone():
    """A gather whose handle is still a resource (a variable not frozen) is not touched."""
    from graphfreeze.graph.variable_readers import finish_readers
    from graphfreeze.proto.tf import graph_pb2

    graph_def = graph_pb2.GraphDef()
    body = graph_def.library.function.add()
    body.signature.name = "body"
    body.signature.input_arg.add(name="h", type=20)
    body.signature.input_arg.add(name="i", type=3)
    gather = body.node_def.add(name="g", op="ResourceGather", input=["h", "i"])
    gather.attr["dtype"].type = 1
    gather.attr["Tindices"].type = 3
    before = graph_def.SerializeToString()
    finish_readers(graph_def)
    assert graph_def.SerializeToString() == before


@pytest.mark.parametrize(("name", "refused"), [("assign_then_read", True),
                                               ("training_batch_norm", False)])
def test_an_assign_read_after_is_refused_before_conversion(loops, name, refused):
    """The graph TensorFlow's converter is given (its top call inlined): the state read back
    after its assign is refused, naming the assign and the variable; the BatchNormalization's
    moving statistics, read before they are assigned, are not."""
    import tensorflow as tf
    from graphfreeze.errors import InputError
    from graphfreeze.graph.assign_reads import refuse_assign_then_read
    from tensorflow.python.framework import convert_to_constants as c2c

    model = tf.saved_model.load(str(loops(name)[0]))  # (it holds the variables)
    func = model.signatures["serving_default"]
    data = c2c._FunctionConverterDataInEager(func=func, lower_control_flow=False,
                                             aggressive_inlining=False)
    if not refused:
        refuse_assign_then_read(data.graph_def, "m")
        return
    with pytest.raises(InputError, match=r"^m: graphfreeze cannot freeze '\S*AssignVariableOp': "
                       r"it assigns variable '\w+' and then reads it; freezing would drop"):
        refuse_assign_then_read(data.graph_def, "m")


@pytest.mark.parametrize("read_after", [True, False])
def test_a_read_in_a_body_ordered_after_the_assign_by_a_control_edge(read_after):
    """In a function body, auto control dependencies order a read after an assign by a control
    edge only (through an Identity of the handle argument): refused; the read before it is not."""
    from graphfreeze.errors import InputError
    from graphfreeze.graph.assign_reads import refuse_assign_then_read
    from graphfreeze.proto.tf import graph_pb2

    graph_def = graph_pb2.GraphDef()
    body = graph_def.library.function.add()
    body.signature.name = "body"
    body.signature.input_arg.add(name="h", type=20)
    body.signature.input_arg.add(name="x", type=1)
    body.node_def.add(name="handle", op="Identity", input=["h"])
    assign = body.node_def.add(name="assign", op="AssignAddVariableOp", input=["handle", "x"])
    read = body.node_def.add(name="read", op="ReadVariableOp", input=["h"])
    (read if read_after else assign).input.append("^assign" if read_after else "^read")
    if not read_after:
        refuse_assign_then_read(graph_def)
        return
    with pytest.raises(InputError, match="^graphfreeze cannot freeze 'assign': it assigns "
                                         "variable 'h' and then reads it"):
        refuse_assign_then_read(graph_def)
