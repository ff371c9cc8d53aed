"""Checks of values and sizes: Const contents against their shapes, placeholders and tensors
made from constant shapes (Fill, random ops), and the sample inputs verification makes; last, a
trial import of the weightless graph (input types, shape inference, `_class`/`_output_shapes`).

Part of `validate.check_graph_def`; `check_feed_size` is for the verify stage.
"""

from __future__ import annotations

import functools

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.checks.validate_inputs import node_at
from graphfreeze.graph.graphdefs import split_tensor
from graphfreeze.graph.ops import PLACEHOLDER_OPS, VARIABLE_OPS, WEIGHT_ATTR

MAX_CONST_BYTES = 2 << 30  # a real Const fits the 2 GiB protobuf; splats expand on import
MAX_TENSOR_BYTES = 16 << 30  # a placeholder, or a tensor made from a constant shape
MAX_FEED_BYTES = 1 << 30  # one sample input made for verification
_SHAPED_BY = {"Fill": (0, "T"), "Empty": (0, "dtype"), "BroadcastTo": (1, "T"),  # input, dtype
              "RandomUniform": (0, "dtype"), "RandomStandardNormal": (0, "dtype"),
              "TruncatedNormal": (0, "dtype"), "RandomUniformInt": (0, "Tout")}
_VALUE_FIELDS = ("half_val", "float_val", "double_val", "int_val", "string_val", "scomplex_val",
                 "int64_val", "bool_val", "dcomplex_val", "resource_handle_val", "variant_val",
                 "uint32_val", "uint64_val")
_FIX = "fix or re-export the graph"


def check_feed_size(name: str, shape, dtype, where: str) -> None:
    """Refuse a sample input over MAX_FEED_BYTES (`shape` concrete, `dtype` numpy-like)."""
    import numpy as np

    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if size > MAX_FEED_BYTES:
        raise InputError(f"{where}: input '{name}' of shape {list(shape)} ({dtype.name}) would "
                         f"need {_human(size)} per sample input, over the {_human(MAX_FEED_BYTES)} "
                         "verification allows; give it a smaller shape with --inputs or pass "
                         "--no-verify")


def _human(size: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "bytes" else f"{size:.0f} bytes"
        size /= 1024


@functools.cache
def _itemsize(dtype: int) -> int:
    """Bytes per element of a DataType enum (0 for strings, resources, variants)."""
    from graphfreeze.proto import dtypes

    base = dtype - 100 if 100 < dtype < 200 else dtype  # a reference type's
    return 8 if base == dtypes.STRING else dtypes.itemsize(dtype)  # strings: numpy objects


def type_name(dtype) -> str:
    from graphfreeze.proto.tf import types_pb2

    return types_pb2.DataType.Name(dtype) if dtype in types_pb2.DataType.values() else str(dtype)


def check_const(node, at: str) -> None:
    """The value's dtype is the node's, and its content fits its shape (and memory)."""
    tensor = node.attr["value"].tensor
    if "dtype" in node.attr and tensor.dtype != node.attr["dtype"].type:
        raise InputError(f"{at} holds a {type_name(tensor.dtype)} value but says dtype "
                         f"{type_name(node.attr['dtype'].type)}; {_FIX}")
    shape = [d.size for d in tensor.tensor_shape.dim]
    if tensor.tensor_shape.unknown_rank or any(d < 0 for d in shape):
        raise InputError(f"{at} has a value of unknown or negative shape; {_FIX}")
    count, itemsize = 1, _itemsize(tensor.dtype)
    for d in shape:
        count *= d
    if count * max(itemsize, 1) > MAX_CONST_BYTES:
        raise InputError(f"{at} has a value of shape {shape}, {_human(count * max(itemsize, 1))}, "
                         f"more than any graph file can hold; {_FIX}")
    content = len(tensor.tensor_content)  # one copy of the weights: upb has no cheaper len
    if content:  # TensorFlow reads the content when there is any, whatever values say
        if itemsize and content != count * itemsize:
            raise InputError(f"{at} has {content} bytes of content but shape {shape} of "
                             f"{type_name(tensor.dtype)} needs {count * itemsize}; {_FIX}")
        return
    values = max(len(getattr(tensor, f)) for f in _VALUE_FIELDS)
    per = 2 if tensor.dtype in (8, 18) else 1  # complex64/128: real and imaginary parts
    if values > count * per:
        raise InputError(f"{at} has {values // per} values but shape {shape} holds {count}; "
                         f"{_FIX}")


def check_sizes(nodes, by_name: dict, where: str) -> None:
    """Placeholders, and tensors made from constant shapes (Fill, random ops), of sane size."""
    import math

    for node in nodes:
        if node.op in PLACEHOLDER_OPS:
            if "shape" not in node.attr:  # (reading a missing key would add it)
                continue
            shape = node.attr["shape"].shape
            shape = [] if shape.unknown_rank else [d.size for d in shape.dim]
            dtype, what = node.attr["dtype"].type, "has shape"
        elif node.op in _SHAPED_BY and len(node.input) > _SHAPED_BY[node.op][0]:
            index, dtype_attr = _SHAPED_BY[node.op]
            source = by_name[split_tensor(node.input[index])[0]]
            if source.op != "Const":
                continue
            held = _held(source) if WEIGHT_ATTR in source.attr else None
            shape = _values(source.attr["value"].tensor) if held is None else held.ravel().tolist()
            dtype, what = node.attr[dtype_attr].type, "makes a tensor of shape"
        else:
            continue
        if not shape or min(shape) < 0:
            continue
        size = math.prod(int(d) for d in shape) * max(_itemsize(dtype), 1)
        if size > MAX_TENSOR_BYTES:
            raise InputError(f"{where}: node '{node.name}' ({node.op}) {what} {shape} "
                             f"({_human(size)}), more than any machine holds; fix the shape or "
                             "re-export the graph")


def _held(node):
    """The value the run holds apart for `node` (a held Const), else None."""
    from graphfreeze.graph.consts import HELD

    held = HELD.get()
    return held.value(node) if held is not None and held.holds(node) else None


def _values(tensor) -> list:
    """A constant shape's values, flat: an int32/int64 one read here (no numpy to import, for
    `freeze scan`), as graphfreeze.proto.tensors.to_numpy reads it; any other through it."""
    import math
    import struct

    count = math.prod(d.size for d in tensor.tensor_shape.dim)
    code = {3: "i", 9: "q"}.get(tensor.dtype)
    values = tensor.int_val if tensor.dtype == 3 else tensor.int64_val
    if code and count >= 0 and not tensor.tensor_content and 0 < len(values) <= count:
        return [*values, *[values[-1]] * (count - len(values))]  # the last repeated, as TF does
    if code and count >= 0 and len(tensor.tensor_content) == count * struct.calcsize(code):
        return list(struct.unpack(f"={count}{code}", tensor.tensor_content))
    from graphfreeze.proto.tensors import to_numpy

    return to_numpy(tensor).reshape(-1).tolist()


def checked_here(graph_def, where: str) -> bool:
    """check_import without TensorFlow (graph/shapes), where every op has a shape function
    here; raises its InputError. False: only TensorFlow can check it."""
    from graphfreeze.graph.shapes.dims import Unsupported
    from graphfreeze.graph.shapes.infer import ImportFault, infer

    try:
        infer(_unshaped_variables(graph_def))
    except ImportFault as err:
        raise InputError(f"{where}: TensorFlow cannot import the graph ({err}); {_FIX}") from None
    except Unsupported:
        return False
    except Exception:  # noqa: BLE001 -- a bug here must not fail a graph TensorFlow can check
        return False
    return True


def check_import(graph_def, where: str) -> None:
    """What TensorFlow's importer checks (inputs' types against the ops', shape inference, the
    `_class` and `_output_shapes` attrs), tried on the skeleton (big constants' bytes dropped) in
    a throwaway graph: a broken graph is refused here, naming the node, not deep in a stage.

    Variables' shapes are left unknown: a meta graph shaped unlike its checkpoint is told apart
    (every variable named, both shapes) when the checkpoint is read."""
    from graphfreeze.graph import c_session
    from graphfreeze.graph.skeleton import skeleton

    trial = _unshaped_variables(skeleton(graph_def))
    try:  # the importer through TensorFlow's C API (no `import tensorflow`)
        with c_session.imported(trial):
            return
    except c_session.Unsupported:
        pass  # refused: TensorFlow's Python API refuses it in its words
    import tensorflow as tf

    try:
        with tf.Graph().as_default():
            tf.graph_util.import_graph_def(trial, name="")
    except (ValueError, TypeError, tf.errors.OpError) as err:
        raise InputError(f"{where}: TensorFlow cannot import the graph ({first_line(err)}); "
                         f"{_FIX}") from err


def _unshaped_variables(graph_def):
    """The graph with its variables' shapes unknown (a copy only if it has variables)."""
    if not any(node.op in VARIABLE_OPS for node in graph_def.node):
        return graph_def
    trial = type(graph_def)()
    trial.CopyFrom(graph_def)
    for node in trial.node:
        if node.op in VARIABLE_OPS:
            node.attr.pop("_output_shapes", None)
            if "shape" in node.attr:
                node.attr["shape"].shape.Clear()
                node.attr["shape"].shape.unknown_rank = True
    return trial


_NUMBERS = frozenset((1, 2, 3, 4, 5, 6, 8, 9, 10, 14, 17, 18, 19, 22, 23))  # fixed-size dtypes
_SMALL = 1024  # elements of a Const remembered by its bytes


def check_const_once(node, is_call: bool, passed: set, where: str, scope: str) -> None:
    """check_const, once per small value (shapes and scalars repeat in a graph): the value's
    bytes and dtype remembered once it passes. Not for a big value (no copy of weights)."""
    attrs = node.attr
    if WEIGHT_ATTR in attrs:  # marks a value graphfreeze holds apart (graph/weights.py)
        if _held(node) is not None:
            return  # (checked as it was read: graph/held_values.py)
        raise InputError(f"{node_at(where, scope, node)} has attr '{WEIGHT_ATTR}', which "
                         "graphfreeze reserves; re-export the graph without it")
    if is_call or "value" not in attrs:  # (not the Const op, or check_const explains)
        return check_const(node, node_at(where, scope, node))
    value = attrs["value"]
    tensor = value.tensor
    count = 1 if tensor.dtype in _NUMBERS else _SMALL + 1
    for dim in tensor.tensor_shape.dim:
        count *= dim.size
        if not 0 <= count <= _SMALL:
            break
    key = None
    if 0 <= count <= _SMALL:
        key = (attrs["dtype"].type if "dtype" in attrs else None, value.SerializeToString())
        if key in passed:
            return
    check_const(node, node_at(where, scope, node))
    if key is not None:
        passed.add(key)
