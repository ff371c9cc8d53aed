"""export_frozen_graph: the frozen GraphDef as deterministic bytes, checked to load in stock TensorFlow."""

from __future__ import annotations

import dataclasses
import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from graphfreeze.formats.frozen_graph.runtime import open_frozen
from graphfreeze.graph.op_libraries import runtime_needs
from graphfreeze.graph.serialize import (
    PROTOBUF_LIMIT,
    check_public_ops,
    const_bytes,
    over_protobuf,
    serialize_chunks,
)
from graphfreeze.graph.tables import init_node
from graphfreeze.plugins import Format, Stage, always
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos

THROUGH = "which a frozen GraphDef is (its weights in it)"


@dataclass(frozen=True)
class FrozenGraphOptions:
    max_bytes: int = PROTOBUF_LIMIT


def run(state, options: FrozenGraphOptions):
    from graphfreeze.graph.graphdefs import op_counts, topo_order

    graph_def = state.graph_def
    size = const_bytes(graph_def, options.max_bytes)
    if size > options.max_bytes:  # before writing anything; the exact size is checked as it streams
        raise over_protobuf(state.output_path, size, options.max_bytes, THROUGH)
    check_public_ops(graph_def)
    digest, written = hashlib.sha256(), [0]

    def chunks(hashing):
        hashed = None  # one chunk hashed at a time, beside the next one's serializing
        for chunk in serialize_chunks(graph_def, topo_order(graph_def), state.weights):
            if hashed is not None:
                hashed.result()
            hashed = hashing.submit(digest.update, chunk)
            written[0] += len(chunk)
            if written[0] > options.max_bytes:
                raise over_protobuf(state.output_path, written[0], options.max_bytes, THROUGH)
            yield chunk
        if hashed is not None:
            hashed.result()

    with ThreadPoolExecutor(1) as hashing:  # hashed as it streams, beside it (hashlib frees the GIL)
        staged = state.files.put(state.output_path, chunks(hashing))
    inputs, outputs = io_infos(state)
    needs, needs_lines = runtime_needs(graph_def)  # TF-Text's ops: tensorflow-text
    init = init_node(graph_def)
    artifact = Artifact(
        path=state.output_path, sha256=digest.hexdigest(), size=written[0], format=FORMAT,
        inputs=inputs, outputs=outputs, staged=staged, loaded=(graph_def, state.weights),
        facts={"node_count": len(graph_def.node), "op_counts": op_counts(graph_def), **needs,
               **({"init_op": init} if init else {})},
        summary=((f'android: run("{init}") once (fills the lookup tables)',) if init else ()) +
        (f"android: feed({', '.join(repr_node(t) for t in inputs)}), "
         f"fetch({', '.join(repr_node(t) for t in outputs)})", *needs_lines))
    return dataclasses.replace(state, artifact=artifact)


def repr_node(info) -> str:
    return f'"{info.name.rsplit(":", 1)[0]}"'


STAGE = Stage("export_frozen_graph", run, "graph", "artifact", FrozenGraphOptions,
              "serialize the frozen GraphDef (.pb), deterministic bytes", suffix=".pb",
              floor=always, weights_apart=True, source_graph=False)
FORMAT = Format("frozen_graph", STAGE, open=open_frozen, max_bytes=PROTOBUF_LIMIT)
