"""export_onnx: an ONNX model through tf2onnx, weights in an external file when large.

tf2onnx's own entry points import the graph into a session, freeze it again and run grappler;
our graph is already frozen and clean, so its converter core (`process_tf_graph`) is fed
directly: TensorFlow sees the graph without its weights (as tf2onnx's own large-model path does,
through `const_node_values`) and tf2onnx reads the weights from our GraphDef. Past
`apart_bytes` of weights, tf2onnx never sees them: they go from the arrays the freeze holds to
FILE.onnx.data (formats/onnx/external.py), so a model over 2 GiB converts in about its weights'
memory.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from dataclasses import dataclass

import numpy as np
from graphfreeze.data.options import CalibrationOptions
from graphfreeze.errors import InputError, first_line
from graphfreeze.formats.onnx.describe import describe
from graphfreeze.formats.onnx.external import as_initializers
from graphfreeze.formats.onnx.fakequant import (
    NodeRefused,
    exact_handlers,
    quantize_folded_weights,
    quiet_tf2onnx,
)
from graphfreeze.formats.onnx.gaps import MIN_OPSET, newest_opset, onnx_gaps
from graphfreeze.formats.onnx.quantize import QUANTIZE
from graphfreeze.formats.onnx.runtime import has_qdq, open_onnx, parts
from graphfreeze.formats.onnx.shapes import fill_io_shapes
from graphfreeze.formats.onnx.text_ops import (
    CONTRIB,
    CONTRIB_OPS,
    extra_opsets,
    runtime_needs,
)
from graphfreeze.formats.onnx.tf2onnx_order import const_protos_synced_once, loops_in_name_order
from graphfreeze.graph.fake_quant import fake_quant_ranges
from graphfreeze.graph.serialize import PROTOBUF_LIMIT, const_bytes, over_protobuf
from graphfreeze.graph.stand_ins import kept_apart, stand_ins
from graphfreeze.graph.tables import initialized_tables
from graphfreeze.io import storage
from graphfreeze.io.trees import artifact_digest
from graphfreeze.options import OptionValueError, option
from graphfreeze.plugins import Format, Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos


@dataclass(frozen=True)
class OnnxOptions(CalibrationOptions):
    opset: int | None = option(None, flag="--opset", metavar="N",
                               help="onnx: ONNX opset (default: newest tf2onnx and onnxruntime "
                                    "both support).")
    external_data_bytes: int = 1 << 30  # weights above this go to FILE.onnx.data
    apart_bytes: int = 1 << 30  # weights held apart above this never go through tf2onnx
    quantize: str = "none"  # none | int8 (static QDQ) | fp16

    def calibrates(self) -> bool:
        return self.quantize == "int8"

    def __post_init__(self):  # checked with the plan, before any model is loaded
        super().__post_init__()
        if self.quantize not in QUANTIZE:
            raise OptionValueError("quantize", repr(self.quantize),
                                   f"choose one of {', '.join(QUANTIZE)}")
        if self.opset is not None and not MIN_OPSET <= self.opset <= newest_opset():
            raise OptionValueError("opset", self.opset, f"this install converts opsets "
                                                        f"{MIN_OPSET} to {newest_opset()}")


def to_onnx(state, opset: int, apart: tuple | None = None):
    """tf2onnx's conversion core on the frozen graph; returns an onnx ModelProto. `apart`:
    (`external.stand_ins` of the graph: the graph it converts, {tensor: array}), those arrays
    initializers whose external data `write` writes.

    tf2onnx's optimizer deep-copies the whole graph before each pass so it can skip a pass that
    fails; that multiplies memory by the weights. Passes run in place here, and only if one
    fails is the conversion redone the careful way.
    """
    try:
        return _to_onnx(state, opset, apart, careful=False)
    except _OptimizerFailed:
        return _to_onnx(state, opset, apart, careful=True)


THROUGH = "which tf2onnx converts through"


class _OptimizerFailed(Exception):
    pass


def _to_onnx(state, opset: int, apart: tuple | None, careful: bool):
    from graphfreeze.graph.session import import_graph
    from graphfreeze.graph.skeleton import is_big_const, skeleton
    from tf2onnx import optimizer, tfonnx, utils

    graph_def, arrays = apart or (state.graph_def, {})
    if (size := const_bytes(graph_def)) > PROTOBUF_LIMIT:  # (else "Failed to serialize proto")
        raise over_protobuf(state.model.graph_file, size, PROTOBUF_LIMIT, THROUGH)
    weights = {n.name: n.attr["value"].tensor.tensor_content for n in graph_def.node
               if is_big_const(n) and n.attr["value"].tensor.tensor_content}
    inputs = [t.name for t in state.inputs] + list(arrays)
    outputs = [t.name for t in state.outputs]
    # tf2onnx numbers the nodes it makes from a global counter, and other names (`unk__N`) from
    # counters of their own: restart it so one run's numbers don't depend on the one before
    # (canonical_names then removes what set-ordering still varies).
    utils.INTERNAL_NAME = 1
    extra = extra_opsets(graph_def, state.model.graph_file)  # TF-Text's, onnxruntime-extensions
    with import_graph(skeleton(graph_def)).as_default() as tf_graph, exact_handlers(), \
            loops_in_name_order():
        try:
            g = tfonnx.process_tf_graph(tf_graph, opset=opset, input_names=inputs,
                                        output_names=outputs, const_node_values=weights,
                                        extra_opset=extra or None,
                                        initialized_tables=initialized_tables(state.graph_def))
        except NodeRefused as err:
            raise InputError(f"{state.model.graph_file}: {err}") from None
        except Exception as err:  # noqa: BLE001 -- tf2onnx's rewriters raise anything
            raise InputError(f"{state.model.graph_file}: tf2onnx cannot convert this graph at "
                             f"opset {opset} ({first_line(err)}); try another --opset, or "
                             "another target") from None
    del weights
    try:
        with const_protos_synced_once():
            g = optimizer.optimize_graph(g, catch_errors=careful)
    except Exception as err:
        if careful:
            raise InputError(f"{state.model.graph_file}: tf2onnx's optimizer failed at opset "
                             f"{opset} ({first_line(err)}); try another --opset, or another "
                             "target") from None
        raise _OptimizerFailed from err
    with quiet_tf2onnx():
        model = g.make_model(f"converted by graphfreeze from "
                             f"{storage.basename(state.model.location)}")
    canonical_names(model, {n.name for n in graph_def.node})
    as_initializers(model, arrays)
    return model


_GENERATED = re.compile(r"__(\d+)")


def canonical_names(model, keep: set[str]) -> None:
    """Renumber the names tf2onnx generated (`Conv__21`, `const_fold_opt__23`, `unk__26`) in
    order of first appearance. Its optimizers walk sets of nodes, so the counter behind those
    names differs run to run even when the graph does not; names in `keep` (TensorFlow's) stay."""
    graph = model.graph
    numbers: dict[str, int] = {}  # generated name (tensor index dropped) -> its new number

    def visit(name: str) -> str:
        node = name.split(":")[0]
        if node not in keep and _GENERATED.search(node):
            numbers.setdefault(node, len(numbers) + 1)
        return name

    def rename(name: str) -> str:
        node, sep, index = name.partition(":")
        if node not in numbers:
            return name
        return _GENERATED.sub(f"__{numbers[node]}", node) + sep + index

    graphs = _with_subgraphs(graph)  # a Loop/If body names outer tensors: renamed alike
    values = [v for g in graphs for v in (*g.input, *g.output, *g.value_info)]
    dims = [d for v in values for d in v.type.tensor_type.shape.dim if d.dim_param]
    # Number in order of appearance along the (deterministic) node order, then rename. The
    # initializers come last: tf2onnx lists them in set order.
    for apply in (visit, rename):
        for value in values:
            value.name = apply(value.name)
        for d in dims:
            d.dim_param = apply(d.dim_param)
        for g in graphs:
            for node in g.node:
                node.name = apply(node.name)
                for field in (node.input, node.output):
                    new = [apply(x) for x in field]
                    del field[:]
                    field.extend(new)
        for g in graphs:
            for tensor in g.initializer:
                tensor.name = apply(tensor.name)
    graph.initializer.sort(key=lambda t: t.name)


def _with_subgraphs(graph) -> list:
    """`graph` and every graph nested in its nodes' attributes (Loop and If bodies), in order."""
    found = [graph]
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                found.extend(_with_subgraphs(sub))
    return found


def unmapped_ops(model) -> list[str]:
    """Ops left in the model that no ONNX operator set defines (tf2onnx could not map them)."""
    import onnx

    ops = set()
    for node in model.graph.node:
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            ops.add(node.op_type)
        elif node.domain not in ("", "ai.onnx", "ai.onnx.ml", "com.microsoft") and not (
                node.domain == CONTRIB and node.op_type in CONTRIB_OPS):
            ops.add(f"{node.domain}:{node.op_type}")
    return sorted(ops)


def write(model, model_path: str, data_path: str | None, arrays: dict | None = None) -> None:
    """Write the model to model_path, and its weights to data_path when there is one (named in
    the model by data_path's base name, as ONNX's external data wants); an initializer named in
    `arrays` (formats/onnx/external.py) gets that array's bytes, written from it."""
    import onnx
    from onnx import external_data_helper

    arrays = arrays or {}
    if data_path is not None:
        location, offset = storage.basename(data_path), 0
        with open(data_path, "wb") as f:
            for tensor in external_data_helper._get_all_tensors(model):  # noqa: SLF001
                if tensor.name in arrays and not tensor.HasField("raw_data"):
                    data = memoryview(np.ascontiguousarray(arrays[tensor.name])).cast("B")
                elif not tensor.HasField("raw_data") or len(tensor.raw_data) < 1024:
                    continue
                else:
                    data = tensor.raw_data
                pad = -offset % 4096  # aligned, as onnx's own writer does for mmap
                f.write(b"\0" * pad)
                offset += pad
                f.write(data)
                tensor.ClearField("raw_data")
                del tensor.external_data[:]  # (what onnx's set_external_data writes)
                tensor.data_location = onnx.TensorProto.EXTERNAL
                for key, value in (("location", location), ("offset", offset),
                                   ("length", len(data))):
                    tensor.external_data.add(key=key, value=str(value))
                offset += len(data)
    with open(model_path, "wb") as f:
        f.write(model.SerializeToString(deterministic=True))


def _tensors(graph_def, arrays: dict) -> tuple:
    """`stand_ins`' arrays by tensor name, as tf2onnx names the inputs."""
    return graph_def, {f"{name}:0": array for name, array in arrays.items()}


_QDQ_NOTE = ("{} as QuantizeLinear/DequantizeLinear, verified as ONNX defines them; "
             "onnxruntime's default int8 kernels may differ by a quantization step")


def run(state, options: OnnxOptions):
    from graphfreeze.formats.onnx.quantize import apply
    from graphfreeze.graph.graphdefs import op_counts

    opset = options.opset or newest_opset()
    inputs, outputs = io_infos(state)
    state, held = kept_apart(state, options.apart_bytes, options.quantize != "none",
                             "the onnx target (float32, weights in FILE.onnx.data)")
    apart = _tensors(*stand_ins(state.graph_def, state.weights)) if held else None
    model = to_onnx(state, opset, apart)
    fill_io_shapes(model, (*inputs, *outputs))
    missing = unmapped_ops(model)
    if missing:
        from graphfreeze.graph.features import parse_refusal_hint

        raise InputError(f"{state.model.graph_file}: tf2onnx has no ONNX mapping at opset {opset} "
                         f"for op(s) {', '.join(missing)}; try a newer --opset, or another target"
                         f"{parse_refusal_hint(state.graph_def, ', '.join(missing))}")
    int8_weights = quantize_folded_weights(model, fake_quant_ranges(state.graph_def))
    qat = has_qdq(model)
    model, quantize_facts, warnings = apply(state, options, model, inputs, qat)
    quantized = has_qdq(model)
    weight_bytes = sum(len(t.raw_data) for t in model.graph.initializer)
    external = apart is not None or weight_bytes > options.external_data_bytes or \
        model.ByteSize() > PROTOBUF_LIMIT
    path = state.output_path
    paths = [path, path + ".data"] if external else [path]
    temps = state.files.workdir(paths)
    write(model, temps[0], temps[1] if external else None, apart and apart[1])
    sha256, size = artifact_digest(temps)
    artifact = Artifact(
        path=path, sha256=sha256, size=size, format=FORMAT, inputs=inputs, outputs=outputs,
        staged=temps[0],
        facts={"opset": opset, "onnx_node_count": len(model.graph.node),
               "int8_weights": len(int8_weights),
               **quantize_facts,
               **({"quantization": "qat (fake quantization as QuantizeLinear/DequantizeLinear)"}
                  if qat else {}),
               "onnx_op_counts": dict(sorted(
                   collections.Counter(n.op_type for n in model.graph.node).items())),
               "node_count": len(state.graph_def.node), "op_counts": op_counts(state.graph_def),
               "external_data": storage.basename(paths[1]) if external else None,
               **runtime_needs(model)[0]},
        summary=((f"weights in {storage.basename(paths[1])} (keep it beside the model)",)
                 if external else ()) +
        ((_QDQ_NOTE.format("fake quantization" if qat else "int8 (onnxruntime's quantizer)"),)
         if quantized else ()) + runtime_needs(model)[1])
    warnings = [*state.notes.get("warnings", []), *warnings] if warnings else []
    return dataclasses.replace(state, artifact=artifact, notes=state.noted(warnings=warnings)
                               if warnings else state.notes,
                               weights=None if apart else state.weights)  # (written)


STAGE = Stage("export_onnx", run, "graph", "artifact", OnnxOptions,
              "ONNX model via tf2onnx (newest opset onnxruntime runs); large weights external",
              suffix=".onnx", source_graph=False, weights_apart=True)
FORMAT = Format("onnx", STAGE, open=open_onnx, gaps=onnx_gaps, parts=parts,
                requires=("tf2onnx", "onnx", "onnxruntime"), extra="convert", describe=describe)
