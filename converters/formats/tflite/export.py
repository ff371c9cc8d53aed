"""export_tflite: a .tflite flatbuffer (float32, fp16, dynamic-range or full int8).

The frozen GraphDef goes to TFLiteConverter as it is (names and shapes given as arrays), so it
is not imported into TensorFlow or re-optimized by grappler first: the graph is already clean.
The artifact runs (verify, io types) in LiteRT's interpreter (`tflite_runtime`); a quantized one
gets a per-layer error table from TensorFlow's QuantizationDebugger (`quant_debug`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.data.options import CalibrationOptions
from graphfreeze.errors import InputError, first_line
from graphfreeze.formats.tflite import aot, buffer_offset, delegates, flex, int8, text_ops
from graphfreeze.formats.tflite.convert import convert, converter, learned_ranges, needs_litert
from graphfreeze.formats.tflite.describe import describe
from graphfreeze.formats.tflite.gaps import tflite_gaps
from graphfreeze.formats.tflite.qat import float_ops, is_qat, kept_float
from graphfreeze.formats.tflite.runtime import open_tflite
from graphfreeze.formats.tflite.selective import IO_TYPES, RANGES
from graphfreeze.formats.tflite.tensor_lists import LOOPS
from graphfreeze.graph.composites import detection_node
from graphfreeze.graph.serialize import PROTOBUF_LIMIT, const_bytes, over_protobuf
from graphfreeze.graph.stand_ins import kept_apart, stand_ins
from graphfreeze.names import TensorRef
from graphfreeze.options import OptionValueError, option
from graphfreeze.plugins import Format, Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos

QUANTIZE = ("none", "fp16", "dynamic", "int8", "int16x8")


@dataclass(frozen=True)
class TFLiteOptions(CalibrationOptions):
    quantize: str = "none"  # none | fp16 | dynamic | int8 | int16x8 (int16 activations)
    allow_tf_ops: bool = option(False, flag="--allow-tf-ops",
                                help="tflite*: let ops TFLite lacks run as TensorFlow kernels "
                                     "(SELECT_TF_OPS).")
    keep_float: tuple[str, ...] = option(
        (), flag="--keep-float", metavar="NAMES", applies=lambda o: o.quantize == "int8",
        help="edge-int8: keep these in float: Keras layer or node names, regular expressions "
             "or op types (CONV_2D), comma-separated or repeated.")
    per_tensor: bool = option(False, flag="--per-tensor", applies=lambda o: o.calibrates(),
                              help="Integer targets: one scale per tensor, not per channel.")
    io_type: str = option("int8", flag="--io-type", metavar="int8|uint8|float",
                          applies=lambda o: o.calibrates(),
                          help="edge-int8: the type of the model's inputs and outputs.")
    calibration_ranges: str = option(
        "minmax", flag="--calibration-ranges", metavar="minmax|average",
        applies=lambda o: o.quantize == "int8",
        help="edge-int8: activation ranges: min/max over all samples (TensorFlow's), or the "
             "moving average of each sample's (ai-edge-quantizer's: outliers cost less).")
    layer_report: bool = True  # quantized: per-layer error from TF's QuantizationDebugger
    apart_bytes: int = 1 << 30  # weights held apart above this never go through the converter

    def calibrates(self) -> bool:
        return self.quantize in ("int8", "int16x8")

    def __post_init__(self):
        super().__post_init__()
        if self.quantize not in QUANTIZE:
            raise OptionValueError("quantize", repr(self.quantize),
                                   f"choose one of {', '.join(QUANTIZE)}")
        if self.calibration_ranges not in RANGES:
            raise OptionValueError("calibration_ranges", repr(self.calibration_ranges),
                                   f"choose {' or '.join(RANGES)}")
        if self.io_type not in IO_TYPES:
            raise OptionValueError("io_type", repr(self.io_type), f"choose {', '.join(IO_TYPES)}")
        keep = tuple(p.strip() for item in self.keep_float for p in item.split(",") if p.strip())
        object.__setattr__(self, "keep_float", keep)
        if keep and self.quantize == "int16x8":
            raise OptionValueError("keep_float", ",".join(keep), "TensorFlow's int16x8 quantizer "
                                   "keeps no layers in float; use edge-int8")


def run(state, options: TFLiteOptions):
    from graphfreeze.io.trees import artifact_digest

    inputs, outputs = io_infos(state)
    state, apart = kept_apart(state, options.apart_bytes, options.quantize != "none",
                              "the tflite target (float32, LiteRT's buffer-offset layout)")
    if not apart and (size := const_bytes(state.graph_def)) > PROTOBUF_LIMIT:  # (else "Failed to serialize
        raise over_protobuf(state.model.graph_file, size, PROTOBUF_LIMIT,  # proto", after minutes)
                            "which the TFLite converter converts through")
    for info in inputs:  # unknown dimensions stay dynamic, as TFLiteConverter keeps them
        if info.shape is None:
            raise InputError(f"input '{info.name}' has unknown rank; TFLite needs its rank: give "
                             f"its shape, e.g. --inputs '{info.name.rsplit(':', 1)[0]}[1,...]' "
                             "with your model's dims (? for a dynamic one)")
    if options.quantize == "int16x8" and is_qat(state.graph_def):
        raise InputError(f"{state.model.graph_file}: quantization-aware trained with int8 "
                         "ranges (FakeQuant ops), which 16x8 quantization cannot use; use "
                         "edge-int8 (int8 from the learned ranges) or tflite")
    qat = learned_ranges(state.graph_def, options)
    loop = next((n.name for n in state.graph_def.node if n.op in LOOPS), None)
    if loop and options.quantize in ("int8", "int16x8") and not qat:
        raise InputError(f"{state.model.graph_file}: node '{loop}' is a recurrent loop, which "
                         "TFLite's integer calibrator cannot run (it crashes); use the "
                         "tflite-dynamic target (int8 weights) or tflite")
    detector = detection_node(state.graph_def) if options.quantize in ("int8", "int16x8") \
        and not qat and options.calibration_data() is None else None
    if detector:
        raise InputError(f"{state.model.graph_file}: node '{detector[0]}' ({detector[1]}) is "
                         "non-max suppression: a detector, whose integer calibration needs "
                         "images with objects in them (synthetic random inputs give no boxes); "
                         "pass --calibration (or --verify-data) with real images, or use "
                         "tflite-fp16 or tflite-dynamic")
    text = next((i.name for i in inputs if i.dtype == "string"), None)
    if text and options.quantize == "int16x8" and not qat:  # int8 calibrates in LiteRT
        raise InputError(f"{state.model.graph_file}: input '{text}' is a string, which TFLite's "
                         "16x8 calibration cannot take (its calibrator crashes on strings, or "
                         "calibrates lookups that all miss: the table's initializer does not "
                         "run); use edge-int8, tflite-dynamic (int8 weights) or tflite")
    report = options.quantize != "none" and options.layer_report and bool(inputs) and \
        not is_qat(state.graph_def) and not loop and \
        not text_ops.text_ops(state.graph_def) and \
        not any(i.dtype == "string" for i in inputs)  # its calibrator crashes on these
    integer = options.quantize in ("int8", "int16x8") and not qat
    samples = options.samples(inputs) if integer or report else None  # domain-aware
    # calibration runs at one length: a dynamic dimension takes the samples' (said below)
    concrete = calibrated_shapes(inputs, samples) if samples else inputs
    if apart:
        return _written_apart(state, options, inputs, outputs)
    data = convert(state, options, concrete if integer else inputs, samples)
    model = None
    if options.quantize == "int8" and not qat:  # `data` is the calibrated float model
        model = int8.build(data, options, state.model.graph_file, samples,
                           state.model.notes.get("keras"), [ref.node for ref in state.inputs],
                           state.model.graph_def)
        data = model.quantized()
    # partly QAT (quantize_annotate_layer on some layers): the other layers stay float, as
    # TFLiteConverter keeps them (qat.kept_float); calibrated in LiteRT: what it left float
    rest = float_ops(data) if qat and options.quantize == "int8" else []
    uncalibrated = float_ops(data) if model is not None and not options.keep_float and \
        needs_litert(state.graph_def, inputs) else []
    data = flex.in_key_order(data)
    (local,) = state.files.workdir([state.output_path])
    with open(local, "wb") as f:
        f.write(data)
    warnings = list(state.notes.get("warnings", []))
    if integer:
        warnings += calibration_warning(state, options, inputs)
        warnings += dynamic_warning(state, options, inputs, concrete)
    if rest:
        warnings.append(kept_float(state.target, rest))
    if model is not None:
        warnings += int8.held_lines(state.target, model)
    if uncalibrated:
        warnings.append(f"{state.target}: {len(uncalibrated)} op(s) stay float "
                        f"({', '.join(uncalibrated[:2])}): TFLite's quantizer has no int8 "
                        "kernel for them, or they run inside an If branch, which the "
                        "calibration in LiteRT (for string inputs and tables) does not cover")
    facts = {"quantize": options.quantize, "allow_tf_ops": options.allow_tf_ops,
             "node_count": len(state.graph_def.node), "tflite_io": io_types(data),
             "gpu": delegates.fact(data),
             **({"calibration": options.calibration_data() or "synthetic"} if integer else {}),
             **({"keep_float": [*model.nodes, *model.ops]} if model and options.keep_float
                else {}),
             **({"per_tensor": True} if integer and options.per_tensor else {}),
             **({"quantization": "qat (ranges learned in training)" +
                 (f"; {len(rest)} op(s) not annotated kept float" if rest else "")}
                if qat else {})}
    summary = composite_lines(state.graph_def, facts)
    if report:
        more, lines, warning = layer_report(state, options, concrete, samples, model)
        summary = (*summary, *lines)
        facts.update(more)
        warnings.extend([warning] if warning else [])
    more, lines = text_ops.runtime_needs(data)
    facts.update(more)
    summary = (*summary, *lines)
    sha256, size = artifact_digest([local])
    artifact = Artifact(
        path=state.output_path, sha256=sha256, size=size, format=FORMAT, inputs=inputs,
        outputs=outputs, staged=local, facts=facts, summary=summary)
    if model is not None:
        artifact = int8.attach(artifact, model, {n.name for n in state.graph_def.node})
    return dataclasses.replace(state, artifact=artifact, notes=state.noted(warnings=warnings)
                               if warnings else state.notes)


def _written_apart(state, options: TFLiteOptions, inputs, outputs):
    """The float model with its held weights converted as stand-ins (graph/stand_ins.py), then
    written as constants after the flatbuffer (buffer_offset.py), never copied."""
    from graphfreeze.io.trees import artifact_digest
    from graphfreeze.tensors import TensorInfo

    graph_def, arrays = stand_ins(state.graph_def, state.weights)
    refs = tuple(TensorRef(name) for name in arrays)
    infos = [TensorInfo(f"{name}:0", a.dtype.name, a.shape) for name, a in arrays.items()]
    converted = convert(dataclasses.replace(state, graph_def=graph_def,
                                            inputs=(*state.inputs, *refs)),
                        options, [*inputs, *infos])
    (local,) = state.files.workdir([state.output_path])
    flat = buffer_offset.write(flex.in_key_order(converted), arrays, local)
    del arrays, converted
    facts = {"quantize": options.quantize, "allow_tf_ops": options.allow_tf_ops,
             "node_count": len(state.graph_def.node), "tflite_io": io_types(path=local),
             "gpu": delegates.fact(flat), "buffer_offset": True}
    more, lines = text_ops.runtime_needs(flat)
    facts.update(more)
    sha256, size = artifact_digest([local])
    artifact = Artifact(
        path=state.output_path, sha256=sha256, size=size, format=FORMAT, inputs=inputs,
        outputs=outputs, staged=local, facts=facts,
        summary=("weights after the flatbuffer (LiteRT's buffer-offset layout: a file over "
                 "2 GiB)", *lines))
    return dataclasses.replace(state, artifact=artifact, weights=None)  # (written: let them go)


def calibrated_shapes(inputs, samples: list) -> list:
    """`inputs` with each dynamic non-batch dimension set to the calibration samples' (the
    user's data, else the seeded samples' default)."""
    return [dataclasses.replace(info, shape=(info.shape[0], *(
        int(got) if d is None else d for d, got in zip(info.shape[1:], sample.shape[1:],
                                                       strict=False))))
            if info.shape and None in info.shape[1:] and len(sample.shape) == len(info.shape)
            else info for info, sample in zip(inputs, samples[0], strict=True)]


def dynamic_warning(state, options: TFLiteOptions, inputs, concrete) -> list[str]:
    """A warning when int8 fixed a dynamic dimension to calibrate."""
    def dims(shape) -> str:
        return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"

    fixed = [f"'{i.name}' {dims(i.shape)} -> {dims(c.shape)}"
             for i, c in zip(inputs, concrete, strict=True) if i.shape != c.shape]
    if not fixed:
        return []
    source = f"the length of {options.calibration_data()}" if options.calibration_data() \
        else "the synthetic samples' default length"
    return [f"{state.target}: int8 calibrates at one length, so dynamic dimensions are fixed to "
            f"{source}: {', '.join(fixed)}; give yours with --inputs (e.g. "
            f"'{inputs[0].name.rsplit(':', 1)[0]}[1,N]')"]


def composite_lines(graph_def, facts: dict) -> tuple[str, ...]:
    """What became of composite functions (`_implements`), and what verification compared them
    with: the op's reference where their body is a stand-in, else their body."""
    from graphfreeze.graph.composites import REFERENCES, composite_calls

    calls = composite_calls(graph_def)
    if calls:
        facts["composites"] = {c.node: c.implements for c in calls}
    return tuple(f"tflite: node '{c.node}' ({c.implements}) handed to the converter to fuse "
                 "into its op; verified against " + (
                     "graphfreeze's NumPy reference of the op on the model's own inputs to it "
                     f"(the body of '{c.function}' is a stand-in)" if c.implements in REFERENCES
                     else f"the body of '{c.function}'") for c in calls)


def calibration_warning(state, options: TFLiteOptions, inputs) -> list[str]:
    """A warning when int8 calibrates on synthetic inputs (no --calibration or --verify-data)."""
    if options.calibration_data() is not None or not inputs:
        return []
    return [f"{state.target}: calibrated on {options.calibration_samples} synthetic random inputs, "
            "so int8 accuracy on real data is unknown; pass --calibration (or --verify-data) "
            "with real samples"]


def layer_report(state, options: TFLiteOptions, inputs, samples, model=None):
    """(facts, summary lines, warning or None): the per-layer table (worst first) of TF's
    QuantizationDebugger on this int8 `model`'s calibration, or for other quantizations on a
    full-int8 converter calibrated on `samples`. A model it cannot calibrate (Flex ops) gets a
    warning, not a failed conversion."""
    from graphfreeze.formats.tflite import quant_debug

    nodes = {n.name for n in state.graph_def.node}
    try:
        if model is not None:
            rows = quant_debug.rows_of_model(model.calibrated(), samples, nodes, model.per_tensor,
                                             model.nodes, model.ops)[:quant_debug.TOP]
        else:
            conv = converter(state.graph_def, state,
                             dataclasses.replace(options, quantize="int8"), inputs, samples)
            rows = quant_debug.layer_table(conv, samples, nodes)
    except Exception as err:  # noqa: BLE001 -- a report, not the artifact: warn and go on
        from graphfreeze.formats.tflite.interpreter import is_flex_error

        why = "its calibrator cannot run Flex ops" if is_flex_error(err) else first_line(err)
        return {}, (), (f"{state.target}: no per-layer quantization report (TensorFlow's "
                        f"QuantizationDebugger: {why})")
    if not rows:
        return {}, (), None
    return ({"quantization_layers": rows,
             "quantization_layers_measure": quant_debug.MEASURES[options.quantize]},
            (quant_debug.summary_line(rows, options.quantize),), None)


def io_types(data: bytes | None = None, path: str | None = None) -> dict:
    """What the app feeds and fetches: {tensor: {dtype, shape, scale, zero_point}}, of the
    flatbuffer's bytes or its file."""
    from graphfreeze.formats.tflite.interpreter import interpreter

    interp = interpreter(model_path=path, model_content=data)
    result = {}
    for role, details in (("inputs", interp.get_input_details()),
                          ("outputs", interp.get_output_details())):
        result[role] = {d["name"]: {"dtype": d["dtype"].__name__,
                                    "shape": [int(x) for x in d["shape_signature"]],
                                    "scale": float(d["quantization"][0]),
                                    "zero_point": int(d["quantization"][1])} for d in details}
    return result


STAGE = Stage("export_tflite", run, "graph", "artifact", TFLiteOptions,
              "TFLite flatbuffer (float32, fp16, dynamic or int8 quantized)", suffix=".tflite",
              source_graph=False, weights_apart=True)
FORMAT = Format("tflite", STAGE, open=open_tflite, gaps=tflite_gaps, describe=describe,
                requires=("ai_edge_litert",), extra="convert", stages=(aot.STAGE,))
