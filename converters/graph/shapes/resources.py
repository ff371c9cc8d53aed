"""Shape functions of variables (tensorflow/core/ops/resource_variable_ops.cc, state_ops.cc):
a resource handle carries its variable's dtype and shape to the reads."""

from __future__ import annotations

from graphfreeze.graph.shapes.context import shape_fn
from graphfreeze.graph.shapes.dims import ShapeError, Unsupported
from graphfreeze.proto import dtypes


@shape_fn("VarHandleOp")
def var_handle(c):
    c.output_handles[0] = (c.attr("dtype"), c.attr("shape"))
    return [()]


@shape_fn("VariableV2")
def variable(c):
    return [c.attr("shape")]


@shape_fn("ReadVariableOp")
def read(c):
    if "_shape" in c.node.attr:
        raise Unsupported("a _shape annotation")
    handle = c.handles[0]
    if handle is None:
        return [None]
    kind, shape = handle
    if kind != c.attr("dtype"):
        raise ShapeError("Trying to read variable with wrong dtype. Expected "
                         f"{dtypes.name(kind)} got {dtypes.name(c.attr('dtype'))}")
    return [shape]
