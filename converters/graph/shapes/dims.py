"""TensorFlow's InferenceContext arithmetic on partial shapes. A shape is None (unknown rank) or
a tuple of dims, a dim an int or None (unknown). Failures raise ShapeError with TensorFlow's
words."""

from __future__ import annotations

Shape = "tuple[int | None, ...] | None"


class ShapeError(Exception):
    """What TensorFlow's shape function would fail with (its message)."""


class Unsupported(Exception):
    """Not inferred here as TensorFlow would: let TensorFlow do it."""


def text(shape) -> str:
    """TensorFlow's DebugString: '[?,224,3]', '?' for unknown rank."""
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def with_rank(shape, rank: int):
    if shape is None:
        return (None,) * rank
    if len(shape) != rank:
        raise ShapeError(f"Shape must be rank {rank} but is rank {len(shape)}")
    return shape


def with_rank_at_least(shape, rank: int):
    if shape is not None and len(shape) < rank:
        raise ShapeError(f"Shape must be at least rank {rank} but is rank {len(shape)}")
    return shape


def with_rank_at_most(shape, rank: int):
    if shape is not None and len(shape) > rank:
        raise ShapeError(f"Shape must be at most rank {rank} but is rank {len(shape)}")
    return shape


def merge_dim(a, b):
    if a is None:
        return b
    if b is not None and a != b:
        raise ShapeError(f"Dimensions must be equal, but are {a} and {b}")
    return a


def merge(a, b):
    """Two shapes that must agree, as one (their known dims together)."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ShapeError(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
    out = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x is not None and y is not None and x != y:
            raise ShapeError(f"Dimension {i} in both shapes must be equal, but are {x} and {y}. "
                             f"Shapes are {text(a)} and {text(b)}.")
        out.append(x if x is not None else y)
    return tuple(out)


def add(a, b: int):
    if b == 0:
        return a
    return b if a == 0 else None if a is None else a + b


def subtract(a, b):
    if a is None or b is None:
        return None
    if a < b:
        raise ShapeError(f"Negative dimension size caused by subtracting {b} from {a}")
    return a - b


def multiply(a, b):
    if a == 1:
        return b
    if b == 1:
        return a
    if a == 0 or b == 0:
        return 0
    return None if a is None or b is None else a * b


def divide(a, by: int, evenly: bool):
    if by == 1 or a is None:
        return a
    if by <= 0:
        raise ShapeError(f"Divisor must be positive but is {by}")
    if evenly and a % by:
        raise ShapeError(f"Dimension size must be evenly divisible by {by} but is {a}")
    return a // by


def elements(shape):
    """NumElements: 0 if a dim is 0, else None unless every dim is known."""
    if shape is None:
        return None
    if 0 in shape:
        return 0
    if None in shape:
        return None
    count = 1
    for d in shape:
        count *= d
    return count


def broadcast(x, y):
    """BroadcastBinaryOpOutputShapeFnHelper (incompatible_shape_error on)."""
    if x is None or y is None:
        return None
    rank = max(len(x), len(y))
    x_pad, y_pad = (1,) * (rank - len(x)) + tuple(x), (1,) * (rank - len(y)) + tuple(y)
    out = []
    for i, (dx, dy) in enumerate(zip(x_pad, y_pad, strict=True)):
        y_is_pad = i < rank - len(y)
        if dx is None or dy is None:
            if (dx or 0) > 1 or (dy or 0) > 1:
                out.append(dx if (dx or 0) > 1 else dy)
            elif dx == 1:
                out.append(dy)
            elif dy == 1:
                out.append(dx)
            else:  # both unknown, or one unknown and one 0
                out.append(None)
        elif dx == 1 or dy == 1:
            out.append(dy if dx == 1 and not y_is_pad else dx)
        else:
            out.append(merge_dim(dx, dy))
    return tuple(out)


def windowed(size, window, dilation: int, stride: int, padding: str, before=-1, after=-1):
    """GetWindowedOutputSizeFromDimsV2: an output's spatial size."""
    if stride <= 0:
        raise ShapeError(f"Stride must be > 0, but got {stride}")
    if dilation < 1:
        raise ShapeError(f"Dilation rate must be >= 1, but got {dilation}")
    if padding == "SAME":
        return divide(add(size, stride - 1), stride, False)
    if padding == "VALID":
        before = after = 0
    size = add(size, before + after)
    if dilation > 1:
        out = subtract(size, add(multiply(subtract(window, 1), dilation), 1))
    else:
        out = subtract(size, window)
    return divide(add(out, stride), stride, False)
