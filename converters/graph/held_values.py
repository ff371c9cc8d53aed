"""A frozen graph's weights held apart as the file is read: never in upb's memory at all.

`proto.stream` reads each big GraphDef node into a bytearray of its own and hands it to
`holder(weights)`'s hook, which finds the `value` attr's `tensor_content` in the node's wire
bytes, keeps the value as a numpy view of that bytearray (writable, nothing else holds it: a
pass may edit it in place) in `weights`, and gives back the node without it, marked as held
(graph/weights.py). So a 97 MB frozen graph costs ~97 MB to read, not its bytes and their
parse, and the graph passes edit its weights without copies. A node the hook does not
understand fully (any field it does not expect, a content that does not fit its shape) is
merged as it is, for validation to say what is wrong with it.
"""

from __future__ import annotations

import numpy as np
from graphfreeze.graph.consts import BIG_CONST_ELEMENTS, WEIGHT_ATTR
from graphfreeze.proto.stream import encode_varint, read_varint


def holder(weights):
    """proto.stream's `hold` hook for a GraphDef file, holding values in `weights`."""
    def hold(field: bytearray):
        try:
            return _held(field, weights) or field
        except (IndexError, ValueError):  # (a varint or a length past the end: not ours to say)
            return field
    return hold


def _held(field: bytearray, weights) -> bytes | None:
    if field[0] != 0x0A:  # GraphDef.node = 1, length-delimited
        return None
    _, start = read_varint(field, 1)
    spans = _value_spans(field, start, len(field))
    if spans is None:
        return None
    (attr_start, attr_in, attr_end), (value_start, value_end), (tensor_in, tensor_end), \
        (content_start, content_in, content_end) = spans
    tensor = field[tensor_in:content_start] + field[content_end:tensor_end]
    attr_value = b"\x42" + encode_varint(len(tensor)) + tensor  # AttrValue.tensor = 8
    entry = field[attr_in:value_start] + b"\x12" + encode_varint(len(attr_value)) + attr_value + \
        field[value_end:attr_end]
    from graphfreeze.proto.tf import node_def_pb2

    node = node_def_pb2.NodeDef.FromString(bytes(
        field[start:attr_start] + b"\x2a" + encode_varint(len(entry)) + entry + field[attr_end:]))
    from google.protobuf.unknown_fields import UnknownFieldSet

    if len(UnknownFieldSet(node)):  # (upb writes them last: the export would reorder them)
        return None
    value = _value(node, field, content_in, content_end - content_in)
    if value is None:
        return None
    weights.hold(node, value, own=True, tensor=False)
    data = node.SerializeToString()
    return b"\x0a" + encode_varint(len(data)) + data


def _value(node, field: bytearray, offset: int, size: int):
    """The Const's value viewing `field`, when the node is a big numeric Const whose content
    fits its dtype and shape; else None."""
    from graphfreeze.proto.dtypes import numpy_dtype

    if node.op != "Const" or WEIGHT_ATTR in node.attr or "dtype" not in node.attr:
        return None
    tensor = node.attr["value"].tensor
    dtype = numpy_dtype(tensor.dtype)
    shape = [d.size for d in tensor.tensor_shape.dim]
    if dtype is None or dtype.kind not in "biufc" or node.attr["dtype"].type != tensor.dtype \
            or tensor.tensor_shape.unknown_rank or any(d < 0 for d in shape):
        return None
    count = int(np.prod(shape, dtype=object))
    if count < BIG_CONST_ELEMENTS or count * dtype.itemsize != size:
        return None
    return np.frombuffer(field, dtype, count, offset).reshape(shape)


def _fields(data, start: int, end: int):
    """(number, wire type, field start, value start, value end) of each field in
    data[start:end] (ValueError: not fields that end there)."""
    pos = start
    while pos < end:
        tag, at = read_varint(data, pos)
        wire = tag & 7
        if wire == 2:
            size, at = read_varint(data, at)
            stop = at + size
        elif wire == 0:
            stop = read_varint(data, at)[1]
        elif wire in (1, 5):
            stop = at + (8 if wire == 1 else 4)
        else:
            raise ValueError("a group or an invalid wire type")
        if stop > end:
            raise ValueError("a field runs past its message")
        yield tag >> 3, wire, pos, at, stop
        pos = stop


def _value_spans(data, start: int, end: int):
    """Where the `value` attr's tensor content is in the NodeDef data[start:end]: its attr
    entry field (start, inside, end), the entry's value field (start, end), the tensor
    (inside, end) and the content field (start, inside, end); None unless exactly one such
    content is there, in an AttrValue holding only the tensor, a tensor of only dtype, shape,
    version and content."""
    found = None
    for number, wire, field_start, inside, stop in _fields(data, start, end):
        if (number, wire) != (5, 2):  # NodeDef.attr
            continue
        key, values = None, []
        for n, w, s, i, e in _fields(data, inside, stop):
            if (n, w) == (1, 2):
                key = bytes(data[i:e])
            elif (n, w) == (2, 2):
                values.append((s, i, e))  # (two are merged: not ours to take apart)
        if key == b"value":
            if found is not None or len(values) != 1:
                return None
            found = (field_start, inside, stop), values[0]
    if found is None:
        return None
    attr, (value_start, value_in, value_end) = found
    parts = list(_fields(data, value_in, value_end))
    if len(parts) != 1 or parts[0][:2] != (8, 2):
        return None
    _, _, _, tensor_in, tensor_end = parts[0]
    fields = list(_fields(data, tensor_in, tensor_end))
    content = [f for f in fields if f[0] == 4]
    if len(content) != 1 or content[0][1] != 2 or any(f[0] not in (1, 2, 3, 4) for f in fields):
        return None
    return attr, (value_start, value_end), (tensor_in, tensor_end), content[0][2:]
