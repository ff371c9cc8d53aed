"""GraphDefs as the bytes a file holds: deterministic, streamed, within protobuf's limit."""

from __future__ import annotations

import math

from graphfreeze.errors import ConfigError
from graphfreeze.graph.consts import WEIGHT_ATTR
from graphfreeze.graph.weights import attached_node, is_held
from graphfreeze.proto.dtypes import itemsize
from graphfreeze.proto.stream import encode_varint

PROTOBUF_LIMIT = 2**31 - 1  # one protobuf message (a GraphDef, an ONNX ModelProto) at most


def const_bytes(graph_def, limit: int = PROTOBUF_LIMIT) -> int:
    """About the bytes of a graph's big constants' values, without reading them: shape times
    dtype size; past `limit`, each not held apart by its ByteSize (upb serializes it to count:
    a splat constant is less than its shape says)."""
    from graphfreeze.graph.skeleton import is_big_const

    big = [n for n in graph_def.node if is_big_const(n)]
    most = sum(_most(n.attr["value"].tensor) for n in big)
    if most <= limit:
        return most
    return sum(_most(n.attr["value"].tensor) if is_held(n) else _size(n.attr["value"].tensor)
               for n in big)


def _size(tensor) -> int:
    """A TensorProto's bytes (upb serializes it to count); over 2 GiB it cannot: its shape's."""
    from google.protobuf.message import EncodeError

    try:
        return tensor.ByteSize()
    except EncodeError:  # ("Failed to serialize proto")
        return _most(tensor)


def _most(tensor) -> int:
    """A number constant's bytes by its shape and dtype (less if splat); a string one's
    ByteSize."""
    return itemsize(tensor.dtype) * math.prod(d.size for d in tensor.tensor_shape.dim) or \
        tensor.ByteSize()


def over_protobuf(where: str, size: int, limit: int, through: str) -> ConfigError:
    """The refusal of weights over one protobuf's `limit` by a target that goes `through` one,
    until it writes them apart: their size, and the target that holds them."""
    return ConfigError(f"{where}: the weights are {size / 2**30:.2f} GiB, over the "
                       f"{limit / 2**30:.3g} GiB of one protobuf, {through}; use the server "
                       "target (a SavedModel keeps them in its variables/ folder)")


def serialize_chunks(graph_def, nodes=None, weights=None):
    """`graph_def.SerializeToString(deterministic=True)`, one node at a time (in the order of
    `nodes`, a permutation of graph_def.node, if given), the values held apart in `weights`
    put back in (graph/weights.py).

    Protobuf writes fields in field-number order (node = 1, library = 2, version = 3,
    versions = 4), each message field as tag, length, bytes; so the concatenation is the same
    bytes without holding a second copy of a large graph in memory.
    """
    for node in graph_def.node if nodes is None else nodes:
        if is_held(node):
            yield from _held_node(node, weights)
            continue
        data = node.SerializeToString(deterministic=True)
        yield b"\x0a" + encode_varint(len(data))  # (not joined: a node may hold 100 MB of weights)
        yield data
    if graph_def.HasField("library"):
        data = graph_def.library.SerializeToString(deterministic=True)
        yield b"\x12" + encode_varint(len(data)) + data
    if graph_def.version:
        yield b"\x18" + encode_varint(graph_def.version)
    if graph_def.HasField("versions"):
        data = graph_def.versions.SerializeToString(deterministic=True)
        yield b"\x22" + encode_varint(len(data)) + data


def _held_node(node, weights):
    """A held node's field in a GraphDef as `attached_node(node, weights)` writes it, the bytes
    of its value last, as they are in memory (no copy): the `value` attr's entry is the node's
    last field (attr keys sorted, none after "value"; no field after `attr`), its tensor's
    content its last field (dtype, shape, then tensor_content)."""
    if max(k for k in node.attr if k != WEIGHT_ATTR) != "value" or \
            node.HasField("experimental_debug_info") or node.HasField("experimental_type"):
        data = attached_node(node, weights).SerializeToString(deterministic=True)
        yield b"\x0a" + encode_varint(len(data)) + data
        return
    import numpy as np

    content = memoryview(np.ascontiguousarray(weights.value(node))).cast("B")
    head = type(node)()
    head.CopyFrom(node)
    del head.attr[WEIGHT_ATTR]
    del head.attr["value"]
    tensor = node.attr["value"].tensor.SerializeToString(deterministic=True) + \
        b"\x22" + encode_varint(len(content))  # TensorProto.tensor_content = 4
    size = len(tensor) + len(content)
    attr_value = b"\x42" + encode_varint(size)  # AttrValue.tensor = 8
    size += len(attr_value)
    entry = b"\x0a\x05value\x12" + encode_varint(size)  # map entry: key = 1, value = 2
    size += len(entry)
    field = b"\x2a" + encode_varint(size)  # NodeDef.attr = 5
    data = head.SerializeToString(deterministic=True) + field + entry + attr_value + tensor
    yield b"\x0a" + encode_varint(len(data) + len(content)) + data
    yield content


def check_public_ops(graph_def) -> None:
    """Only ops any TensorFlow runtime registers (no grappler-internal `_Fused*`)."""
    from graphfreeze.errors import GraphFreezeError
    from graphfreeze.proto.ops import op_def

    functions = {f.signature.name for f in graph_def.library.function}
    for node in graph_def.node:
        if node.op.startswith("_") or (op_def(node.op) is None
                                       and node.op not in functions):
            raise GraphFreezeError(f"node '{node.name}' uses op {node.op}, which stock TensorFlow "
                                   "does not register; report this as a graphfreeze bug")
