"""export_pb: the frozen GraphDef as deterministic bytes, checked to load in stock TensorFlow."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from graphfreeze.errors import OutputError
from graphfreeze.formats.frozen_pb.latency import frozen_latency
from graphfreeze.formats.frozen_pb.probe import frozen_probe
from graphfreeze.graph.serialize import PROTOBUF_LIMIT, check_public_ops, serialize_chunks
from graphfreeze.graph.skeleton import is_big_const
from graphfreeze.plugins import Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos


@dataclass(frozen=True)
class ExportPbOptions:
    max_bytes: int = PROTOBUF_LIMIT


def run(state, options: ExportPbOptions):
    from graphfreeze.graph.graphdefs import op_counts, topo_order
    from graphfreeze.graph.skeleton import run_frozen

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

    state.files.put(state.output_path, chunks())
    inputs, outputs = io_infos(state)
    artifact = Artifact(
        path=state.output_path, sha256=digest.hexdigest(), size=written[0],
        format="frozen_graph_pb",
        inputs=inputs, outputs=outputs,
        facts={"node_count": len(graph_def.node), "op_counts": op_counts(graph_def)},
        run=lambda feeds: run_frozen(graph_def, feeds, [t.name for t in state.outputs]),
        probe=frozen_probe(graph_def),
        latency=frozen_latency(graph_def, inputs, outputs),
        summary=(f"android: feed({', '.join(repr_node(t) for t in inputs)}), "
                 f"fetch({', '.join(repr_node(t) for t in outputs)})",))
    return dataclasses.replace(state, artifact=artifact)


def repr_node(info) -> str:
    return f'"{info.name.rsplit(":", 1)[0]}"'


STAGE = Stage("export_pb", run, "graph", "artifact", ExportPbOptions,
              "serialize the frozen GraphDef (.pb), deterministic bytes", suffix=".pb")
