"""export_pb: the frozen GraphDef as deterministic bytes, checked to load in stock TensorFlow."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from graphfreeze.errors import GraphFreezeError, OutputError
from graphfreeze.registry import Stage
from graphfreeze.state import Artifact, TensorInfo

PROTOBUF_LIMIT = 2**31 - 1
BIG_CONST_ELEMENTS = 1024  # constants this big are weights, never shapes or axes


def is_big_const(node) -> bool:
    if node.op != "Const":
        return False
    count = 1
    for dim in node.attr["value"].tensor.tensor_shape.dim:
        count *= dim.size
    return count >= BIG_CONST_ELEMENTS


@dataclass(frozen=True)
class ExportPbOptions:
    max_bytes: int = PROTOBUF_LIMIT


def tensor_infos(graph_def, refs) -> tuple[TensorInfo, ...]:
    """Dtype and static shape of each named tensor, from TensorFlow's own shape inference."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(skeleton(graph_def), name="")
    infos = []
    for ref in refs:
        tensor = graph.get_tensor_by_name(ref.name)
        shape = None if tensor.shape.rank is None else tuple(tensor.shape.as_list())
        infos.append(TensorInfo(ref.name, tensor.dtype.name, shape))
    return tuple(infos)


def io_infos(state) -> tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]:
    """(inputs, outputs) of state.graph_def, worked out once per graph for all targets."""
    memo = state.model.memo
    cached = memo.get("io_infos")
    if cached is None or cached[0] is not state.graph_def:
        infos = tensor_infos(state.graph_def, [*state.inputs, *state.outputs])
        cached = (state.graph_def, infos[:len(state.inputs)], infos[len(state.inputs):])
        memo["io_infos"] = cached
    return cached[1], cached[2]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def serialize_chunks(graph_def, nodes=None):
    """`graph_def.SerializeToString(deterministic=True)`, one node at a time (in the order of
    `nodes`, a permutation of graph_def.node, if given).

    Protobuf writes fields in field-number order (node = 1, library = 2, version = 3,
    versions = 4), each message field as tag, length, bytes; so the concatenation is the same
    bytes without holding a second copy of a large graph in memory.
    """
    for node in graph_def.node if nodes is None else nodes:
        data = node.SerializeToString(deterministic=True)
        yield b"\x0a" + _varint(len(data)) + data
    if graph_def.HasField("library"):
        data = graph_def.library.SerializeToString(deterministic=True)
        yield b"\x12" + _varint(len(data)) + data
    if graph_def.version:
        yield b"\x18" + _varint(graph_def.version)
    if graph_def.HasField("versions"):
        data = graph_def.versions.SerializeToString(deterministic=True)
        yield b"\x22" + _varint(len(data)) + data


def skeleton(graph_def):
    """The graph with big constants' bytes dropped (dtype and shape kept): enough for shape
    inference at a fraction of the memory."""
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        new = out.node.add()
        if not is_big_const(node):
            new.CopyFrom(node)  # small constants may be shapes or axes: keep their values
            continue
        new.name, new.op = node.name, node.op
        new.input.extend(node.input)
        new.attr["dtype"].CopyFrom(node.attr["dtype"])
        tensor = new.attr["value"].tensor
        tensor.dtype = node.attr["value"].tensor.dtype
        tensor.tensor_shape.CopyFrom(node.attr["value"].tensor.tensor_shape)
    return out


def check_public_ops(graph_def) -> None:
    """Only ops any TensorFlow runtime registers (no grappler-internal `_Fused*`)."""
    from tensorflow.python.framework import op_def_registry

    functions = {f.signature.name for f in graph_def.library.function}
    for node in graph_def.node:
        if node.op.startswith("_") or (op_def_registry.get(node.op) is None
                                       and node.op not in functions):
            raise GraphFreezeError(f"node '{node.name}' uses op {node.op}, which stock TensorFlow "
                                   "does not register; report this as a graphfreeze bug")


def run(state, options: ExportPbOptions):
    from graphfreeze.graph.graphdefs import op_counts, topo_order
    from graphfreeze.stages.verify import run_candidate

    graph_def = state.graph_def
    too_big = OutputError(f"{state.output_path}: the frozen graph is over the 2 GiB limit of one "
                          "protobuf (its weights are constants); use the server or onnx target")
    if sum(len(n.attr["value"].tensor.tensor_content) for n in graph_def.node
           if is_big_const(n)) > options.max_bytes:
        raise too_big  # before writing anything; the exact size is checked as it streams
    check_public_ops(graph_def)
    digest, written = hashlib.sha256(), [0]

    def chunks():
        for chunk in serialize_chunks(graph_def, topo_order(graph_def)):
            digest.update(chunk)
            written[0] += len(chunk)
            if written[0] > options.max_bytes:
                raise too_big
            yield chunk

    state.batch.stage(state.output_path, chunks())
    inputs, outputs = io_infos(state)
    artifact = Artifact(
        path=state.output_path, sha256=digest.hexdigest(), size=written[0],
        format="frozen_graph_pb",
        inputs=inputs, outputs=outputs,
        facts={"node_count": len(graph_def.node), "op_counts": op_counts(graph_def)},
        run=lambda feeds: run_candidate(graph_def, feeds, [t.name for t in state.outputs]))
    return dataclasses.replace(state, artifact=artifact)


STAGE = Stage("export_pb", run, "graph", "artifact", ExportPbOptions,
              "serialize the frozen GraphDef (.pb), deterministic bytes", suffix=".pb")
