"""export_openvino: the cleaned frozen graph to OpenVINO IR (`.xml` + `.bin` beside it) with
OpenVINO's own TensorFlow frontend, inputs and outputs named as in the frozen graph."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from graphfreeze.errors import InputError, first_line
from graphfreeze.formats.openvino.gaps import convert, unconverted_ops
from graphfreeze.formats.openvino.latency import openvino_latency
from graphfreeze.formats.openvino.probe import openvino_probe
from graphfreeze.formats.openvino.runtime import compiled_runner
from graphfreeze.io import storage
from graphfreeze.options import option
from graphfreeze.plugins import Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos


@dataclass(frozen=True)
class OpenVinoOptions:
    compress_to_fp16: bool = option(False, help="openvino: store weights as float16 (half the "
                                                "size; computed in f32).")


def to_ir(state, inputs, outputs):
    """The OpenVINO model of the state's frozen graph; ops OpenVINO cannot take are one line
    naming the nodes."""
    from graphfreeze.graph.skeleton import run_frozen  # noqa: F401 -- TensorFlow's env first

    try:
        return convert(state.graph_def, [(i.name, i.shape) for i in inputs],
                       [o.name for o in outputs])
    except Exception as err:  # noqa: BLE001 -- OpConversionFailure and other frontend errors
        where = state.model.graph_file
        ops = unconverted_ops(str(err))
        if ops:
            nodes = [f"{n.name} ({n.op})" for n in state.graph_def.node if n.op in ops][:5]
            raise InputError(f"{where}: OpenVINO cannot convert op(s) "
                             f"{', '.join(ops)} (node {', '.join(nodes)}); use another target"
                             ) from err
        raise InputError(f"{where}: OpenVINO cannot convert the graph: {first_line(err)}") from err


def run(state, options: OpenVinoOptions):
    import openvino as ov
    from graphfreeze.graph.graphdefs import op_counts

    inputs, outputs = io_infos(state)
    model = to_ir(state, inputs, outputs)
    path = state.output_path
    paths = [path, path[:-len(".xml")] + ".bin"]
    temps = state.files.workdir(paths)
    ov.save_model(model, temps[0], compress_to_fp16=options.compress_to_fp16)
    digest, size = hashlib.sha256(), 0
    for final, temp in zip(paths, temps, strict=True):
        file_digest, file_size = storage.tree_digest(temp)
        digest.update(f"{storage.basename(final)}\0{file_digest}\n".encode())
        size += file_size
    ir_ops = [op.get_type_name() for op in model.get_ordered_ops()]
    artifact = Artifact(
        path=path, sha256=digest.hexdigest(), size=size, format="openvino_ir",
        inputs=inputs, outputs=outputs,
        facts={"weights": storage.basename(paths[1]), "openvino_version": ov.get_version(),
               "openvino_op_counts": {t: ir_ops.count(t) for t in sorted(set(ir_ops))},
               "node_count": len(state.graph_def.node), "op_counts": op_counts(state.graph_def)},
        run=compiled_runner(temps[0], inputs, outputs),
        probe=openvino_probe(temps[0], inputs),
        latency=openvino_latency(temps[0], inputs),
        summary=(f"openvino: core.read_model(\"{storage.basename(path)}\") (weights in "
                 f"{storage.basename(paths[1])}); inputs "
                 f"{', '.join(i.name for i in inputs)}; outputs "
                 f"{', '.join(o.name for o in outputs)}",))
    return dataclasses.replace(state, artifact=artifact)


STAGE = Stage("export_openvino", run, "graph", "artifact", OpenVinoOptions,
              "OpenVINO IR (.xml + .bin) with OpenVINO's TensorFlow frontend", suffix=".xml")
