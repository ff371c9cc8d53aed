"""Shape functions of constants, placeholders, identities and the ops that rearrange a tensor
(tensorflow/core/ops/array_ops.cc, functional_ops.cc)."""

from __future__ import annotations

from graphfreeze.graph.shapes.context import shape_fn, shape_of
from graphfreeze.graph.shapes.dims import (
    ShapeError,
    Unsupported,
    add,
    divide,
    elements,
    merge,
    merge_dim,
    multiply,
    with_rank,
    with_rank_at_least,
)

IDENTITIES = ("Identity", "Snapshot", "StopGradient", "PreventGradient")


@shape_fn("Const")
def const(c):
    return [shape_of(c.node.attr["value"].tensor.tensor_shape)]


@shape_fn("Placeholder")
def placeholder(c):
    shape = c.attr("shape")
    if c.version <= 21 and (shape is None or len(shape) == 0):
        return [None]  # old graphs cannot tell a scalar from an unknown shape
    return [shape]


@shape_fn("PlaceholderWithDefault")
def placeholder_with_default(c):
    shape = c.attr("shape")
    merge(c.shapes[0], shape)
    return [shape]


@shape_fn(*IDENTITIES)
def unchanged(c):
    if c.handles[0] is not None:
        c.output_handles[0] = c.handles[0]
    return [c.shapes[0]]


@shape_fn("Shape")
def shape(c):
    return [(None if c.shapes[0] is None else len(c.shapes[0]),)]


@shape_fn("If", "StatelessIf")
def if_(c):
    shapes = c.attr("output_shapes")
    if not shapes:
        return [None] * c.outputs
    if len(shapes) != c.outputs:
        raise ShapeError("`output_shapes` must be the same length as num outputs "
                         f"({len(shapes)} vs. {c.outputs}")
    return shapes


@shape_fn("Reshape")
def reshape(c):
    """SetOutputShapeForReshape: the target shape, its one -1 worked out where it can be."""
    given, out = c.shapes[0], c.shape_tensor(1)
    if out is None or given is None:
        return [out]
    out = list(out)
    out_known, out_missing, many = _known_elements(out)
    in_known, in_missing, many_in = _known_elements(given)
    if many or many_in:
        return [tuple(out)]
    if in_missing is None and out_missing is None:
        if in_known != out_known:
            raise ShapeError(f"Cannot reshape a tensor with {in_known} elements to shape "
                             f"[{','.join('?' if d is None else str(d) for d in out)}] "
                             f"({out_known} elements)")
    elif in_missing is None and out_missing is not None and out_known > 0:
        out[out_missing] = divide(in_known, out_known, True)
    elif in_missing is not None and out_missing is None and in_known != 0:
        merge_dim(given[in_missing], divide(out_known, in_known, True))
    elif in_missing is not None and out_missing is not None and in_known == out_known:
        out[out_missing] = given[in_missing]
    return [tuple(out)]


def _known_elements(shape) -> tuple:
    """(product of the known dims, index of the one unknown dim or None, more than one)."""
    count = elements(shape)
    if count is not None:
        return count, None, False
    count, missing = 1, None
    for i, d in enumerate(shape):
        if d is None:
            if missing is not None:
                return count, missing, True
            missing = i
        else:
            count = multiply(count, d)
    return count, missing, False


@shape_fn("ConcatV2")
def concat(c):
    """ConcatShapeHelper: the other dims merged, the axis's summed."""
    values, axis = c.shapes[:-1], c.value(len(c.shapes) - 1)
    with_rank(c.shapes[-1], 0)
    if axis is None:
        rank = next((len(s) for s in values if s is not None), None)
        if rank is None:
            return [None]
        if rank == 0:
            raise ShapeError("Can't concatenate scalars (use tf.stack instead)")
        for s in values:
            with_rank(s, rank)
        return [(None,) * rank]
    axis = int(axis.reshape(-1)[0])
    least = -axis if axis < 0 else axis + 1
    parts = [_around(with_rank_at_least(s, least), axis) for s in reversed(values)]
    before, middle, after = parts[0]
    for b, m, a in parts[1:]:
        before, after = merge(b, before), merge(a, after)
        middle = _sum(middle, m)
    return [None if before is None or after is None else (*before, middle, *after)]


def _sum(a, b):
    if a == 0 or b == 0:
        return b if a == 0 else a
    return None if a is None or b is None else a + b


def _around(shape, axis: int):
    if shape is None:
        return None, None, () if axis == -1 else None
    i = axis % len(shape)
    return shape[:i], shape[i], shape[i + 1:]


@shape_fn("Pad", "PadV2")
def pad(c):
    paddings = with_rank(c.shapes[1], 2)
    if paddings[1] is not None and paddings[1] != 2:
        raise ShapeError(f"Dimension must be 2 but is {paddings[1]}")
    given, rows = c.shapes[0], paddings[0]
    if rows is not None:
        given = with_rank(given, rows)
    elif given is not None:
        rows = len(given)
    value = c.value(1)
    if value is None:
        return [None if rows is None else (None,) * rows]
    if value.ndim != 2:
        raise Unsupported("paddings of another rank")
    given = with_rank(given, value.shape[0])
    if (value < 0).any():
        raise ShapeError("Paddings must be non-negative")
    return [tuple(add(d, int(p0 + p1)) for d, (p0, p1) in zip(given, value, strict=True))]


@shape_fn("Squeeze")
def squeeze(c):
    given = c.shapes[0]
    if given is None:
        return [None]
    rank, axes = len(given), list(c.attr("squeeze_dims"))
    for i, a in enumerate(axes):
        if a < -rank or a >= rank:
            raise ShapeError(f"squeeze_dims[{i}] not in [{-rank},{rank}).")
        axes[i] = a + rank if a < 0 else a
    out = []
    for i, d in enumerate(given):
        explicit = i in axes
        if d is None:
            if explicit:
                continue
            if not axes:
                return [None]
        elif d == 1:
            if explicit or not axes:
                continue
        elif explicit:
            raise ShapeError(f"Can not squeeze dim[{i}], expected a dimension of 1, got {d}")
        out.append(d)
    return [tuple(out)]


@shape_fn("ExpandDims")
def expand_dims(c):
    value = c.value(1)
    if value is not None and value.size != 1:
        raise ShapeError("'dim' input must be a tensor with a single value")
    given = c.shapes[0]
    if value is None or given is None:
        return [None]
    axis, rank = int(value.reshape(-1)[0]), len(given)
    if axis < -rank - 1 or axis > rank:
        raise ShapeError(f"dim {axis} not in the interval [{-rank - 1}, {rank}].")
    axis = axis + rank + 1 if axis < 0 else axis
    return [(*given[:axis], 1, *given[axis:])]


@shape_fn("IdentityN")
def identity_n(c):
    for i, handle in enumerate(c.handles):
        if handle is not None:
            c.output_handles[i] = handle
    return list(c.shapes)


@shape_fn("RandomUniform", "RandomStandardNormal")
def random(c):
    return [c.shape_tensor(0)]


@shape_fn("Switch", "RefSwitch")
def switch(c):
    with_rank(c.shapes[1], 0)
    if c.handles[0] is not None:
        c.output_handles.update({0: c.handles[0], 1: c.handles[0]})
    return [c.shapes[0], c.shapes[0]]


@shape_fn("Merge", "RefMerge")
def merge_(c):
    """MergeShape: the dims every input agrees on (a while loop's Merge never gets here: its
    back edge is a cycle)."""
    out = c.shapes[0]
    for shape in c.shapes[1:]:
        if out is None:
            break
        if shape is None or len(shape) != len(out):
            out = None
            break
        out = tuple(d if d == e else None for d, e in zip(out, shape, strict=True))
    return [out, ()]
