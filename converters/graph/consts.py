"""Reading and making Const nodes."""

from __future__ import annotations

import numpy as np
from graphfreeze.graph.graphdefs import split_tensor
from tensorflow.core.framework import node_def_pb2
from tensorflow.python.framework import tensor_util

PASS_THROUGH = ("Identity", "Snapshot", "StopGradient", "PreventGradient")


def make_const(name: str, value, dtype=None) -> node_def_pb2.NodeDef:
    proto = tensor_util.make_tensor_proto(np.asarray(value) if dtype is None else value, dtype)
    node = node_def_pb2.NodeDef(name=name, op="Const")
    node.attr["dtype"].type = proto.dtype
    node.attr["value"].tensor.CopyFrom(proto)
    return node


def const_value(by_name: dict, tensor: str):
    """numpy value of `tensor` if it is (an Identity chain over) a Const, else None."""
    name, index = split_tensor(tensor)
    node = by_name.get(name)
    while node is not None and node.op in PASS_THROUGH and index == 0:
        name, index = split_tensor(node.input[0])
        node = by_name.get(name)
    if node is None or node.op != "Const" or index != 0:
        return None
    return tensor_util.MakeNdarray(node.attr["value"].tensor)
