"""Shape functions of elementwise ops, reductions and matrix products
(tensorflow/core/ops/math_ops.cc, nn_ops.cc)."""

from __future__ import annotations

from graphfreeze.graph.shapes.context import shape_fn
from graphfreeze.graph.shapes.dims import (
    ShapeError,
    Unsupported,
    broadcast,
    merge,
    merge_dim,
    with_rank,
    with_rank_at_least,
    with_rank_at_most,
)

UNARY = ("Relu", "Relu6", "Elu", "Selu", "Sigmoid", "Tanh", "Neg", "Abs", "Exp", "Log", "Sqrt",
         "Rsqrt", "Square", "Floor", "Ceil", "Round", "Reciprocal", "Erf", "Softplus",
         "Softsign", "LeakyRelu", "Cast", "Sign", "Log1p", "Sin", "Cos", "LogicalNot")
BINARY = ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "Maximum", "Minimum",
          "Pow", "SquaredDifference", "FloorDiv", "FloorMod", "Greater", "GreaterEqual", "Less",
          "LessEqual", "LogicalAnd", "LogicalOr")
REDUCTIONS = ("Mean", "Sum", "Max", "Min", "Prod", "All", "Any")


@shape_fn(*UNARY)
def unary(c):
    return [c.shapes[0]]


@shape_fn("Softmax", "LogSoftmax")
def softmax(c):
    return [with_rank_at_least(c.shapes[0], 1)]


@shape_fn(*BINARY)
def binary(c):
    return [broadcast(c.shapes[0], c.shapes[1])]


@shape_fn("Equal", "NotEqual")
def equal(c):
    if not c.attr("incompatible_shape_error"):
        raise Unsupported("broadcasting without its shape errors")
    return [broadcast(c.shapes[0], c.shapes[1])]


@shape_fn("SelectV2")
def select(c):
    if c.handles[1] is not None or c.handles[2] is not None:
        raise Unsupported("selecting resources")
    return [broadcast(c.shapes[0], broadcast(c.shapes[1], c.shapes[2]))]


@shape_fn("AddN")
def add_n(c):
    out = c.shapes[-1]
    for shape in reversed(c.shapes[:-1]):
        out = merge(shape, out)
    return [out]


@shape_fn(*REDUCTIONS)
def reduction(c):
    """ReductionShape: the reduced axes dropped (or 1 with keep_dims)."""
    given = c.shapes[0]
    if c.version >= 21:
        with_rank_at_most(c.shapes[1], 1)
    keep = c.attr("keep_dims")
    axes = c.value(1)
    if axes is None or given is None:
        return [(None,) * len(given) if keep and given is not None else None]
    if axes.dtype.kind != "i":
        raise Unsupported("reduction indices of another type")
    rank, reduced = len(given), set()
    for a in axes.reshape(-1).tolist():
        if a < -rank or a >= rank:
            raise ShapeError(f"Invalid reduction dimension {a} for input with {rank} "
                             "dimensions.")
        reduced.add(a + rank if a < 0 else a)
    return [tuple(1 if i in reduced else d for i, d in enumerate(given)
                  if keep or i not in reduced)]


@shape_fn("MatMul")
def matmul(c):
    a, b = with_rank(c.shapes[0], 2), with_rank(c.shapes[1], 2)
    ta, tb = c.attr("transpose_a"), c.attr("transpose_b")
    merge_dim(a[0] if ta else a[1], b[1] if tb else b[0])
    return [(a[1] if ta else a[0], b[0] if tb else b[1])]
