"""export_openvino: the cleaned frozen graph to OpenVINO IR (`.xml` + `.bin` beside it) with
OpenVINO's own TensorFlow frontend, inputs and outputs named as in the frozen graph; or, for a
SavedModel's own signature (`reads`), the SavedModel folder read by that frontend itself."""

from __future__ import annotations

import dataclasses
import errno
import os
from dataclasses import dataclass

from graphfreeze.errors import InputError
from graphfreeze.formats.openvino import tokenizers
from graphfreeze.formats.openvino.convert import to_ir
from graphfreeze.formats.openvino.describe import describe
from graphfreeze.formats.openvino.gaps import openvino_gaps
from graphfreeze.formats.openvino.runtime import open_openvino, parts
from graphfreeze.graph.serialize import PROTOBUF_LIMIT, const_bytes, over_protobuf
from graphfreeze.graph.stand_ins import held_bytes, stand_ins
from graphfreeze.graph.weights import attach
from graphfreeze.io import storage
from graphfreeze.io.trees import artifact_digest
from graphfreeze.options import option
from graphfreeze.plugins import Format, Stage, always
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos


@dataclass(frozen=True)
class OpenVinoOptions:
    compress_to_fp16: bool = option(False, help="openvino: store weights as float16 (half the "
                                                "size; computed in f32).")
    apart_bytes: int = 1 << 30  # weights held apart above this never go through the frontend


def run(state, options: OpenVinoOptions):
    import openvino as ov
    from graphfreeze.graph.graphdefs import op_counts

    inputs, outputs = io_infos(state)
    crashing = [c for c in state.notes.get("composites_inlined", []) if c.endswith(
        "(non_max_suppression_padded_v2)")]
    if crashing:  # OpenVINO 2026's CPU plugin, on ov.convert_model's IR of the SavedModel too
        raise InputError(f"{state.model.graph_file}: function {crashing[0].split()[0]} is "
                         "TensorFlow's padded NMS (tf.image.non_max_suppression_padded), whose "
                         "loops OpenVINO converts but its CPU plugin cannot run (\"StaticMemory "
                         "... undefined\", or a segmentation fault); use the onnx or tflite "
                         "target")
    apart = False
    if getattr(state.model, "interface", False):  # the SavedModel, read by the frontend itself
        model = to_ir(state.model.stored_graph, state.model.graph_file, inputs, outputs,
                      folder=state.model.location)
        graph_facts = {"openvino_read": "the SavedModel folder"}  # no frozen graph made
    elif apart := held_bytes(state.weights) > options.apart_bytes:  # never in one GraphDef
        model = _apart(state, inputs, outputs)
        graph_facts = {"node_count": len(state.graph_def.node),
                       "op_counts": op_counts(state.graph_def)}
    else:
        if state.weights is not None:  # (the frontend reads them from the graph)
            attach(state.graph_def, state.weights)
            state = dataclasses.replace(state, weights=None)
        if (size := const_bytes(state.graph_def)) > PROTOBUF_LIMIT:  # (else "Failed to serialize
            raise over_protobuf(state.model.graph_file, size, PROTOBUF_LIMIT,  # proto")
                                "which OpenVINO's TensorFlow frontend converts a graph through")
        model = to_ir(state.graph_def, state.model.graph_file, inputs, outputs)
        graph_facts = {"node_count": len(state.graph_def.node),
                       "op_counts": op_counts(state.graph_def)}
    path = state.output_path
    paths = parts(path)
    temps = state.files.workdir(paths)
    _save(ov, model, temps, path, options.compress_to_fp16)
    sha256, size = artifact_digest(temps)
    ir_ops = [op.get_type_name() for op in model.get_ordered_ops()]
    extension = tokenizers.extension_ops(model)
    artifact = Artifact(
        path=path, sha256=sha256, size=size, format=FORMAT, inputs=inputs, outputs=outputs,
        staged=temps[0],
        facts={"weights": storage.basename(paths[1]), "openvino_version": ov.get_version(),
               "openvino_op_counts": {t: ir_ops.count(t) for t in sorted(set(ir_ops))},
               **graph_facts,
               # a QAT model's FakeQuantize runs in int8 (OpenVINO's low-precision transforms)
               **({"quantization": "qat (FakeQuantize, run in int8 by OpenVINO's CPU plugin)"}
                  if "FakeQuantize" in ir_ops else {}),
               **({"op_libraries": [tokenizers.PACKAGE], "custom_ops": extension}
                  if extension else {})},
        summary=(f"openvino: core.read_model(\"{storage.basename(path)}\") (weights in "
                 f"{storage.basename(paths[1])}); inputs "
                 f"{', '.join(i.name for i in inputs)}; outputs "
                 f"{', '.join(o.name for o in outputs)}",
                 *(["read from the SavedModel folder by OpenVINO's TensorFlow frontend"]
                   if "openvino_read" in graph_facts else []),
                 *([f"ops of {tokenizers.PACKAGE} ({', '.join(extension)}): `import "
                    "openvino_tokenizers` before creating the Core that reads it"]
                   if extension else [])))
    return dataclasses.replace(state, artifact=artifact, weights=None if apart else
                               state.weights)  # (written: let them go)


def _apart(state, inputs, outputs):
    """The IR of the graph with its held weights as stand-ins (graph/stand_ins.py), each
    Parameter then replaced by a Constant sharing the held array's memory (no copy)."""
    import openvino as ov
    from graphfreeze.tensors import TensorInfo

    graph_def, arrays = stand_ins(state.graph_def, state.weights)
    infos = [TensorInfo(f"{name}:0", a.dtype.name, a.shape) for name, a in arrays.items()]
    model = to_ir(graph_def, state.model.graph_file, [*inputs, *infos], outputs)
    for parameter in list(model.get_parameters()):
        names = parameter.output(0).get_names()
        name = next((i.name.rsplit(":", 1)[0] for i in infos if names & {i.name, i.name[:-2]}),
                    None)
        if name is not None:
            constant = ov.op.Constant(_shared(arrays[name]), shared_memory=True)
            parameter.output(0).replace(constant.output(0))
            model.remove_parameter(parameter)
    model.validate_nodes_and_infer_types()
    return model


def _shared(array):
    """A view of `array`'s memory that OpenVINO's Constant takes without copying (it refuses a
    read-only array; it never writes a Constant's data)."""
    import ctypes

    import numpy as np

    array = np.ascontiguousarray(array)
    memory = (ctypes.c_char * array.nbytes).from_address(array.ctypes.data)
    view = np.frombuffer(memory, dtype=array.dtype).reshape(array.shape)
    memory._graphfreeze_keep = array  # (the array's memory lives as long as the view)
    return view


def _save(ov, model, temps: list[str], path: str, compress_to_fp16: bool) -> None:
    """The IR of `path` at `temps` (`parts`' two names): OpenVINO writes only to a name ending
    in `.xml` (the `.bin` is that name's stem + `.bin`), and reads any name; -o may give
    another. A failed write is `path`'s one line (disk full: said as the other formats say it)."""
    xml = temps[0] if temps[0].endswith(".xml") else temps[0] + ".xml"
    try:
        ov.save_model(model, xml, compress_to_fp16=compress_to_fp16)
    except RuntimeError as err:  # its C++ stream errors name no cause: the disk's is said
        disk = os.statvfs(os.path.dirname(xml))
        if disk.f_bavail * disk.f_frsize < (1 << 20):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)) from err
        raise storage.write_error(path, err) from err
    if xml != temps[0]:
        os.replace(xml, temps[0])


STAGE = Stage("export_openvino", run, "graph", "artifact", OpenVinoOptions,
              "OpenVINO IR (.xml + .bin) with OpenVINO's TensorFlow frontend", suffix=".xml",
              floor=always, reads=("saved_model",), source_graph=False, weights_apart=True)
FORMAT = Format("openvino", STAGE, open=open_openvino, gaps=openvino_gaps, parts=parts,
                requires=("openvino",), extra="openvino", floor=True, describe=describe)
