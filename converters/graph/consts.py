"""Reading and making Const nodes (a big one's value may be held apart: graph/weights.py)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import node_def_pb2

import numpy as np
from graphfreeze.graph.graphdefs import split_tensor
from graphfreeze.graph.ops import IDENTITY_OPS, WEIGHT_ATTR

BIG_CONST_ELEMENTS = 1024  # constants this big are weights, never shapes or axes
# the Weights the graph stages hold a frozen graph's big values in (graph/weights.held)
HELD: ContextVar = ContextVar("held_weights", default=None)


def make_const(name: str, value, dtype=None) -> node_def_pb2.NodeDef:
    """A Const of `value` (a numeric array: its bytes; else, or with a TensorFlow `dtype`,
    as `make_tensor_proto` writes it)."""
    from graphfreeze.proto.tf import node_def_pb2

    node = node_def_pb2.NodeDef(name=name, op="Const")
    tensor = node.attr["value"].tensor
    value = np.asarray(value) if dtype is None else value
    if dtype is None and value.dtype.kind in "biufc":
        set_value(node, value)
    else:
        from tensorflow.python.framework import tensor_util

        tensor.CopyFrom(tensor_util.make_tensor_proto(value, dtype))
    node.attr["dtype"].type = tensor.dtype
    return node


def set_value(node, value: np.ndarray, own: bool = False) -> None:
    """A Const node's value: held apart when Weights are held and it is a big number array
    (graph/weights.py; `own`: nothing else holds its memory), else in its tensor."""
    held = HELD.get()
    if held is not None and value.dtype.kind in "biufc" and value.size >= BIG_CONST_ELEMENTS:
        held.hold(node, value, own)
    else:
        set_tensor(node.attr["value"].tensor, value)


def set_tensor(proto, value: np.ndarray, content: bool = True) -> None:
    """`proto.CopyFrom(make_tensor_proto(value))` for numeric arrays, without per-element checks
    (`content=False`: its dtype and shape only, the value being held apart)."""
    from graphfreeze.proto.dtypes import enum_of

    dtype = enum_of(value.dtype) if value.dtype.kind in "biufc" else None
    if dtype is None:
        from tensorflow.python.framework import tensor_util

        proto.CopyFrom(tensor_util.make_tensor_proto(value))
        return
    proto.Clear()
    proto.dtype = dtype
    proto.tensor_shape.SetInParent()  # a scalar's shape present, as make_tensor_proto writes it
    for dim in value.shape:  # (OpenVINO's .pb reader misreads a Const without one)
        proto.tensor_shape.dim.add().size = dim
    if content:
        proto.tensor_content = value_bytes(value)


def value_bytes(value: np.ndarray) -> bytes:
    """The array's bytes: the `bytes` object it views when it views all of one in order (as a
    checkpoint's tensor read by `proto.bundle` does), not a copy of them."""
    base = value
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, bytes) and value.flags.c_contiguous and value.nbytes == len(base):
        return base
    return np.ascontiguousarray(value).tobytes()


def _const_node(by_name: dict, tensor: str):
    """The Const behind `tensor` (through an Identity chain), else None."""
    name, index = split_tensor(tensor)
    node = by_name.get(name)
    while node is not None and node.op in IDENTITY_OPS and index == 0:
        name, index = split_tensor(node.input[0])
        node = by_name.get(name)
    if node is None or node.op != "Const" or index != 0:
        return None
    return node


def is_const(by_name: dict, tensor: str) -> bool:
    return _const_node(by_name, tensor) is not None


def const_value(by_name: dict, tensor: str):
    """numpy value (read-only) of `tensor` if it is (an Identity chain over) a Const, else None."""
    node = _const_node(by_name, tensor)
    return None if node is None else node_value(node)


def node_value(node) -> np.ndarray:
    """A Const node's value (read-only): from the held Weights if it is held apart."""
    if WEIGHT_ATTR in node.attr:
        return HELD.get().value(node)
    return tensor_array(node.attr["value"].tensor)


def tensor_array(proto) -> np.ndarray:
    """numpy value of a TensorProto; a read-only view of its bytes when it has tensor_content."""
    from graphfreeze.proto.dtypes import numpy_dtype
    from graphfreeze.proto.tensors import to_numpy

    content = proto.tensor_content
    dtype = numpy_dtype(proto.dtype)
    if content and dtype is not None and dtype.kind in "biufc":
        return np.frombuffer(content, dtype).reshape([d.size for d in proto.tensor_shape.dim])
    try:
        return to_numpy(proto)
    except ValueError:  # no numpy value (a resource, a variant): as TensorFlow says it
        from tensorflow.python.framework import tensor_util

        return tensor_util.MakeNdarray(proto)
