"""graph/shapes against TensorFlow's importer: one-op graphs of every op with a shape function
here (after graph/checks/validate, as every source runs it), drawn by hypothesis (partial and
unknown shapes, wrong ranks, bad attrs, wrong input types, `_output_shapes`), must get the same
dtypes and shapes, or be refused where TensorFlow refuses them; an answer of Unsupported is
allowed (TensorFlow then answers). TensorFlow's importer through its C API (graph/c_session)
must answer each graph as its Python API does."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.errors import InputError
from graphfreeze.graph.checks.validate import check_graph_def
from graphfreeze.graph.shapes.context import FUNCTIONS
from graphfreeze.graph.shapes.dims import Unsupported
from graphfreeze.graph.shapes.infer import ImportFault, infer
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tensorflow.core.framework import attr_value_pb2, graph_pb2, tensor_shape_pb2

FLOAT, INT32 = 1, 3
dims = st.sampled_from([None, 0, 1, 1, 2, 3, 4, 6])
shapes = st.one_of(st.none(), st.lists(dims, max_size=5).map(tuple))
rank4 = st.one_of(st.none(), st.lists(dims, min_size=3, max_size=5).map(tuple),
                  st.lists(dims, min_size=4, max_size=4).map(tuple))


def shape_proto(shape) -> tensor_shape_pb2.TensorShapeProto:
    proto = tensor_shape_pb2.TensorShapeProto(unknown_rank=shape is None)
    for d in shape or ():
        proto.dim.add(size=-1 if d is None else d)
    return proto


class Graph:
    """A GraphDef built node by node."""

    def __init__(self):
        self.graph_def = graph_pb2.GraphDef()
        self.graph_def.versions.producer = tf.__compat_version__ if hasattr(
            tf, "__compat_version__") else 1700

    def node(self, op: str, inputs=(), name=None, **attrs) -> str:
        node = self.graph_def.node.add(op=op, name=name or f"n{len(self.graph_def.node)}")
        node.input.extend(inputs)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        return node.name

    def placeholder(self, shape, dtype=FLOAT) -> str:
        return self.node("Placeholder", dtype=attr(type=dtype), shape=attr(shape=shape))

    def const(self, value, dtype=INT32) -> str:
        tensor = tf.make_tensor_proto(np.asarray(value, dtype=tf.as_dtype(dtype).as_numpy_dtype))
        return self.node("Const", dtype=attr(type=dtype), value=attr_value_pb2.AttrValue(
            tensor=tensor))

    def value_or_fed(self, value, fed: bool, dtype=INT32) -> str:
        """A Const holding `value`, or (fed) a placeholder of its shape."""
        return self.placeholder(np.shape(value), dtype) if fed else self.const(value, dtype)


def attr(**kind) -> attr_value_pb2.AttrValue:
    (key, value), = kind.items()
    if key == "shape":
        return attr_value_pb2.AttrValue(shape=shape_proto(value))
    if key == "ints":
        return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(i=value))
    if key == "shapes":
        return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(
            shape=[shape_proto(s) for s in value]))
    return attr_value_pb2.AttrValue(**{key: value})


def tensorflow_shapes(graph_def):
    """{node: [(dtype, shape)]} as TensorFlow imports it, or the error it refuses it with."""
    with tf.Graph().as_default() as graph:
        try:
            tf.graph_util.import_graph_def(graph_def, name="")
        except (ValueError, TypeError, tf.errors.OpError) as err:
            return err
    return {op.name: [(t.dtype.as_datatype_enum,
                       None if t.shape.rank is None else tuple(t.shape.as_list()))
                      for t in op.outputs] for op in graph.get_operations()}


def c_api_shapes(graph_def, theirs: dict):
    """`theirs`'s tensors as TensorFlow's importer through its C API answers them
    (graph/c_session: the import check and shape inference of a run's TensorFlow child), or
    "refused" (the graph, or a tensor the C importer does not have)."""
    from graphfreeze.graph import c_session

    try:
        with c_session.imported(graph_def) as graph:
            return {op: [graph.tensor_type(f"{op}:{i}") for i in range(len(outputs))]
                    for op, outputs in theirs.items()}
    except c_session.Unsupported:
        return "refused"


def assert_agrees(graph: Graph, recorded=None):
    if recorded is not None:  # the last node gets an _output_shapes attr
        graph.graph_def.node[-1].attr["_output_shapes"].CopyFrom(attr(shapes=recorded))
    theirs = tensorflow_shapes(graph.graph_def)
    if isinstance(theirs, Exception):
        assert c_api_shapes(graph.graph_def, {}) == "refused"
    else:
        assert c_api_shapes(graph.graph_def, theirs) == theirs
    try:
        check_graph_def(graph.graph_def, "model.pb")  # what every source runs first
        ours = infer(graph.graph_def)
    except Unsupported as err:
        event(f"unsupported: {str(err)[:40]}")
        return
    except (ImportFault, InputError) as err:
        assert isinstance(theirs, Exception), f"refused here ({err}), TensorFlow imports it"
        event("both refuse")
        return
    assert not isinstance(theirs, Exception), f"TensorFlow refuses: {theirs}; here {ours}"
    assert ours == theirs
    event("both infer")


relaxed = settings(max_examples=int(os.environ.get("SHAPES_EXAMPLES", 60)), deadline=None,
                   suppress_health_check=list(HealthCheck))


@relaxed
@given(st.sampled_from(["Relu", "Sigmoid", "Softmax", "Identity", "Shape", "Cast", "Squeeze"]),
       shapes, st.lists(st.integers(-4, 4), max_size=2),
       st.one_of(st.none(), st.lists(shapes, max_size=2)))
def test_one_input(op, shape, axes, recorded):
    g = Graph()
    x = g.placeholder(shape)
    extra = {"Shape": {"out_type": attr(type=INT32)},
             "Cast": {"SrcT": attr(type=FLOAT), "DstT": attr(type=INT32)},
             "Squeeze": {"squeeze_dims": attr(ints=axes)}}.get(op, {})
    g.node(op, [x], **({"T": attr(type=FLOAT)} if op != "Cast" else {}), **extra)
    assert_agrees(g, recorded)


@relaxed
@given(st.sampled_from(["AddV2", "Mul", "Maximum", "Equal", "AddN"]), shapes, shapes,
       st.booleans(), st.booleans())
def test_two_inputs(op, x_shape, y_shape, flag, wrong_type):
    g = Graph()
    x, y = g.placeholder(x_shape), g.placeholder(y_shape, INT32 if wrong_type else FLOAT)
    extra = {"Equal": {"incompatible_shape_error": attr(b=flag)},
             "AddN": {"N": attr(i=2)}}.get(op, {})
    g.node(op, [x, y], T=attr(type=FLOAT), **extra)
    assert_agrees(g)


@relaxed
@given(shapes, st.lists(st.integers(-5, 5), max_size=3), st.booleans(), st.booleans(),
       st.sampled_from(["Mean", "Sum", "Max"]))
def test_reductions(shape, axes, keep, fed, op):
    g = Graph()
    x = g.placeholder(shape)
    g.node(op, [x, g.value_or_fed(axes, fed)], T=attr(type=FLOAT), Tidx=attr(type=INT32),
           keep_dims=attr(b=keep))
    assert_agrees(g)


@relaxed
@given(shapes, shapes, st.booleans(), st.booleans())
def test_matmul(a, b, ta, tb):
    g = Graph()
    g.node("MatMul", [g.placeholder(a), g.placeholder(b)], T=attr(type=FLOAT),
           transpose_a=attr(b=ta), transpose_b=attr(b=tb))
    assert_agrees(g)


windows = st.lists(st.integers(0, 3), min_size=3, max_size=5)


@relaxed
@given(st.sampled_from(["Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool"]), rank4,
       rank4, windows, windows, windows, st.sampled_from(["SAME", "VALID"]),
       st.sampled_from(["NHWC", "NCHW"]))
def test_windows(op, shape, kernel, strides, dilations, ksize, padding, fmt):
    g = Graph()
    inputs = [g.placeholder(shape)]
    extra = {"ksize": attr(ints=ksize)} if "Pool" in op else {"dilations": attr(ints=dilations)}
    if "Pool" not in op:
        inputs.append(g.placeholder(kernel))
    g.node(op, inputs, T=attr(type=FLOAT), strides=attr(ints=strides),
           padding=attr(s=padding.encode()), data_format=attr(s=fmt.encode()), **extra)
    assert_agrees(g)


@relaxed
@given(shapes, shapes, st.sampled_from(["NHWC", "NCHW"]))
def test_bias_add(shape, bias, fmt):
    g = Graph()
    g.node("BiasAdd", [g.placeholder(shape), g.placeholder(bias)], T=attr(type=FLOAT),
           data_format=attr(s=fmt.encode()))
    assert_agrees(g)


@relaxed
@given(shapes, st.one_of(st.just(-1), st.lists(st.sampled_from([-1, -1, 0, 1, 2, 3, 6, 12]),
                                                 max_size=4)), st.booleans())
def test_reshape(shape, target, fed):
    g = Graph()
    g.node("Reshape", [g.placeholder(shape), g.value_or_fed(target, fed)], T=attr(type=FLOAT),
           Tshape=attr(type=INT32))
    assert_agrees(g)


@relaxed
@given(st.lists(shapes, min_size=1, max_size=3), st.integers(-4, 4), st.booleans())
def test_concat(parts, axis, fed):
    g = Graph()
    inputs = [g.placeholder(s) for s in parts]
    g.node("ConcatV2", [*inputs, g.value_or_fed(axis, fed)], T=attr(type=FLOAT),
           N=attr(i=len(parts)), Tidx=attr(type=INT32))
    assert_agrees(g)


@relaxed
@given(shapes, st.lists(st.sampled_from([-1, 0, 2, 3]), max_size=3),
       st.sampled_from(["const", "fed", "shape"]))
def test_random_uniform(shape, target, source):
    """Its shape input as a Const, a placeholder, or the Shape of a partly known tensor."""
    g = Graph()
    if source == "shape":
        made = g.node("Shape", [g.placeholder(shape)], T=attr(type=FLOAT),
                      out_type=attr(type=INT32))
    else:
        made = g.value_or_fed(target, source == "fed")
    g.node("RandomUniform", [made], T=attr(type=INT32), dtype=attr(type=FLOAT))
    assert_agrees(g)


@relaxed
@given(st.lists(shapes, min_size=1, max_size=3), shapes)
def test_cond_switch_and_merge(branches, pred):
    """A v1 cond's Switch (the predicate must be a scalar) and Merge (the dims all agree on)."""
    g = Graph()
    flag = g.placeholder(pred, 10)
    sides = [g.node("Switch", [g.placeholder(s), flag], T=attr(type=FLOAT)) for s in branches]
    g.node("Merge", [f"{side}:{i % 2}" for i, side in enumerate(sides)], T=attr(type=FLOAT),
           N=attr(i=len(sides)))
    assert_agrees(g)


@relaxed
@given(rank4, st.lists(shapes, min_size=4, max_size=4), st.booleans(),
       st.sampled_from(["FusedBatchNormV3", "FusedBatchNorm"]), st.sampled_from(["NHWC", "NCHW"]))
def test_fused_batch_norm(x, vectors, training, op, fmt):
    g = Graph()
    extra = {"U": attr(type=FLOAT)} if op == "FusedBatchNormV3" else {}
    g.node(op, [g.placeholder(x), *[g.placeholder(v) for v in vectors]], T=attr(type=FLOAT),
           is_training=attr(b=training), data_format=attr(s=fmt.encode()), **extra)
    assert_agrees(g)


@relaxed
@given(shapes, shapes, shapes)
def test_select(cond, then, other):
    g = Graph()
    g.node("SelectV2", [g.placeholder(cond, 10), g.placeholder(then), g.placeholder(other)],
           T=attr(type=FLOAT))
    assert_agrees(g)


@relaxed
@given(shapes, st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 2)), max_size=5),
       st.booleans())
def test_pad(shape, paddings, fed):
    g = Graph()
    value = np.array(paddings, dtype=np.int32).reshape(-1, 2)
    g.node("Pad", [g.placeholder(shape), g.value_or_fed(value, fed)], T=attr(type=FLOAT),
           Tpaddings=attr(type=INT32))
    assert_agrees(g)


@relaxed
@given(shapes, st.one_of(st.integers(-6, 6), st.lists(st.integers(-2, 2), max_size=2)))
def test_expand_dims(shape, axis):
    g = Graph()
    g.node("ExpandDims", [g.placeholder(shape), g.const(axis)], T=attr(type=FLOAT),
           Tdim=attr(type=INT32))
    assert_agrees(g)


@relaxed
@given(shapes, shapes, st.booleans())
def test_placeholder_with_default(given_shape, shape, old):
    g = Graph()
    if old:
        g.graph_def.versions.producer = 20
    g.node("PlaceholderWithDefault", [g.placeholder(given_shape)], dtype=attr(type=FLOAT),
           shape=attr(shape=shape))
    assert_agrees(g)


@relaxed
@given(shapes, st.sampled_from([FLOAT, INT32]), st.booleans())
def test_variables(shape, read_as, through_identity):
    g = Graph()
    handle = g.node("VarHandleOp", dtype=attr(type=FLOAT), shape=attr(shape=shape),
                    shared_name=attr(s=b"v"))
    if through_identity:
        handle = g.node("Identity", [handle], T=attr(type=20))
    g.node("ReadVariableOp", [handle], dtype=attr(type=read_as))
    assert_agrees(g)


def test_every_op_with_a_shape_function_is_drawn_above():
    drawn = {"Relu", "Sigmoid", "Softmax", "Identity", "Shape", "Cast", "Squeeze", "AddV2", "Mul",
             "Maximum", "Equal", "AddN", "Mean", "Sum", "Max", "MatMul", "Conv2D",
             "DepthwiseConv2dNative", "MaxPool", "AvgPool", "BiasAdd", "Reshape", "ConcatV2",
             "Pad", "ExpandDims", "PlaceholderWithDefault", "Placeholder", "Const",
             "VarHandleOp", "ReadVariableOp", "RandomUniform", "SelectV2", "Switch", "Merge",
             "FusedBatchNormV3", "FusedBatchNorm"}
    families = {"unary", "binary", "reduction", "unchanged", "softmax", "equal"}
    undrawn = {op for op, fn in FUNCTIONS.items() if op not in drawn and fn.__name__ not in
               families}
    assert undrawn <= {"If", "StatelessIf", "IdentityN", "VariableV2", "PadV2",
                       "RandomStandardNormal", "RefSwitch", "RefMerge", "FusedBatchNormV2"}, undrawn


@pytest.mark.parametrize("kind", ["cnn_v1", "cnn_v2", "iris_resource"])
def test_sample_graphs_agree_node_by_node(samples, kind):
    """Every node of a real training graph whose ancestors all have shape functions here."""
    from graphfreeze.proto.tf import meta_graph_pb2

    meta = meta_graph_pb2.MetaGraphDef.FromString(
        (samples / kind / "model.ckpt-200.meta").read_bytes())
    theirs, inferred = tensorflow_shapes(meta.graph_def), 0
    for node in meta.graph_def.node:
        try:
            ours = infer(meta.graph_def, [node.name])
        except Unsupported:
            continue
        inferred += 1
        assert all(ours[n] == theirs[n] for n in ours), node.name
    assert inferred > len(meta.graph_def.node) // 4
