"""What a shape function sees of its node (TensorFlow's InferenceContext, in short), and the
table of shape functions by op type."""

from __future__ import annotations

from graphfreeze.graph.shapes.dims import ShapeError, Unsupported, with_rank
from graphfreeze.proto.ops import attr_value

FUNCTIONS: dict = {}  # op type -> function(Context) -> [output shape, ...]


def shape_fn(*ops: str):
    """Register the decorated function as the shape function of `ops`."""
    def register(function):
        for op in ops:
            FUNCTIONS[op] = function
        return function
    return register


def shape_of(proto):
    """A TensorShapeProto as a shape (None: unknown rank); ShapeError if it is no valid one."""
    if proto.unknown_rank:
        if proto.dim:
            raise ShapeError("An unknown rank shape has dimensions")
        return None
    dims = tuple(d.size for d in proto.dim)
    if any(d < -1 for d in dims):
        raise ShapeError(f"Shape {list(dims)} has dimensions with values below -1 (where -1 "
                         "means unknown)")
    return tuple(None if d == -1 else d for d in dims)


class PartialShape:
    """The value of `Shape(x)` where x's shape is partly known: what TensorFlow's importer
    knows of it as a shape (ShapeRefiner::ConstantPartialShape), and nothing as a value."""

    def __init__(self, shape):
        self.shape = shape


class Context:
    """One node: its attrs (with the op's defaults), its inputs' shapes, dtypes and resource
    handles, and the values of inputs TensorFlow knows before running (a Const's)."""

    def __init__(self, node, op_def, shapes: list, dtypes: list, handles: list, values: list,
                 outputs: int, version: int):
        self.node, self.op_def = node, op_def
        self.shapes, self.dtypes, self.handles = shapes, dtypes, handles
        self._values = values  # per input: a function returning its value
        self.outputs, self.version = outputs, version
        self.output_handles: dict = {}  # output index -> (dtype, shape) of the resource

    def attr(self, name: str):
        """The attr's value as Python (ints, strings, shapes, lists of those)."""
        value = attr_value(self.node, self.op_def, name)
        if value is None:
            raise Unsupported(f"attr {name} missing")
        kind = value.WhichOneof("value")
        if kind == "list":
            fields = value.list.ListFields()
            if not fields:
                return []
            field, items = fields[0]
            if field.name == "shape":
                return [shape_of(s) for s in items]
            return [i.decode() if isinstance(i, bytes) else i for i in items]
        if kind == "shape":
            return shape_of(value.shape)
        if kind == "s":
            return value.s.decode(errors="replace")
        if kind in ("i", "f", "b", "type"):
            return getattr(value, kind)
        raise Unsupported(f"attr {name} of kind {kind}")

    def value(self, index: int):
        """Input `index`'s value as numpy (None: TensorFlow cannot know it before running)."""
        value = self._values[index]()
        return None if isinstance(value, PartialShape) else value

    def shape_tensor(self, index: int):
        """MakeShapeFromShapeTensor: the shape the vector input `index` holds (-1: unknown)."""
        shape = with_rank(self.shapes[index], 1)
        value = self._values[index]()
        if isinstance(value, PartialShape):
            if value.shape is not None:
                return value.shape
            value = None
        if value is None:
            return None if shape[0] is None else (None,) * shape[0]
        dims = [int(v) for v in value.reshape(-1)]
        for d in dims:
            if d < -1:
                raise ShapeError(f"Dimension {d} must be >= -1")
        return tuple(None if d == -1 else d for d in dims)
