"""Full-integer quantization in TensorFlow's own two steps: calibrate once
(`_experimental_calibrate_only`), then `mlir_quantize` the calibrated model. Between the two,
layers can be kept in float (`denylisted_nodes` / `denylisted_ops`, what TensorFlow's
QuantizationDebugger's selective quantization passes) and a model re-quantized with another
float set costs no new calibration (--keep-float, --quantize-until)."""

from __future__ import annotations

import difflib
import re

from graphfreeze.errors import InputError
from graphfreeze.graph.layer_names import layer_members

IO_TYPES = ("int8", "uint8", "float")


def calibrate(conv) -> None:
    """Make `conv` (Optimize.DEFAULT with a representative dataset) stop after calibration."""
    conv.experimental_new_quantizer = True
    conv._experimental_calibrate_only = True  # noqa: SLF001 -- TF's own debugger does the same


def quantize(calibrated: bytes, io_type: str = "int8", per_tensor: bool = False,
             nodes=(), ops=()) -> bytes:
    """The calibrated model quantized to int8, with `io_type` inputs and outputs and the ops that
    output tensors `nodes` or have types `ops` (TFLite names) kept in float."""
    import tensorflow as tf
    from graphfreeze.process.quiet import native_stderr_off
    from tensorflow.lite.python.convert import mlir_quantize

    dtype = {"int8": tf.int8, "uint8": tf.uint8, "float": tf.float32}[io_type]
    with native_stderr_off():
        return mlir_quantize(calibrated, disable_per_channel=per_tensor, input_data_type=dtype,
                             output_data_type=dtype, denylisted_nodes=list(nodes) or None,
                             denylisted_ops=list(ops) or None)


def layers(calibrated: bytes) -> list[tuple[str, str]]:
    """(output tensor name, TFLite op name) of every op of a calibrated model."""
    from graphfreeze.formats.tflite.interpreter import interpreter

    interp = interpreter(model_content=calibrated)
    tensors = {d["index"]: d["name"] for d in interp.get_tensor_details()}
    found = []
    for op in interp._get_ops_details():  # noqa: SLF001 -- as TF's QuantizationDebugger reads it
        if op["op_name"] in ("QUANTIZE", "DEQUANTIZE") or not len(op["outputs"]):
            continue
        found.append((tensors.get(int(op["outputs"][0]), ""), op["op_name"]))
    return found


def _plain(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def resolve(patterns, calibrated: bytes, where: str, keras: str | None = None,
            graph_def=None, held: list | None = None) -> tuple[list[str], list[str]]:
    """(tensor names, op names) that --keep-float `patterns` name: an op type (CONV_2D, Conv2D,
    FULLY_CONNECTED), a node of the graph (any name TFLite fused into an op), a regular
    expression matched against those names, or a Keras layer (`Conv1`: the ops in its scope, as
    `keras` names them, see layer_names; a layer named like an op type, `conv2d`, is the layer
    unless spelled as TFLite spells the op). A layer none of whose ops kept its name (TFLite
    fused it into a neighbour's op, a conv whose batch norm was folded in) is the op that holds
    it: the first named op downstream of its nodes in `graph_def` (the graph converted), noted
    in `held` as (pattern, op, tensor). A pattern that matches nothing is an InputError with
    the nearest names."""
    known = layers(calibrated)
    parts = sorted({p for t, _ in known for p in t.split(";")})
    nodes, ops = [], []
    for pattern in patterns:
        members = set(layer_members(parts, pattern, keras))
        op_hits = sorted({op for _, op in known if op == pattern or not members and (
            _plain(op) == _plain(pattern) or
            _plain(op).replace("2d", "") == _plain(pattern).replace("2d", ""))})
        if op_hits:
            ops.extend(o for o in op_hits if o not in ops)
            continue
        try:
            regex = re.compile(pattern)
        except re.error:
            regex = re.compile(re.escape(pattern))
        hits = [t for t, _ in known if any(p == pattern or regex.fullmatch(p)
                                           for p in (t, *t.split(";")))] or \
            [t for t, _ in known if members & set(t.split(";"))]
        if not hits and graph_def is not None:
            hits = holding(graph_def, pattern, known, keras)
            if held is not None:
                held.extend((pattern, dict(known)[t], t) for t in hits)
        if not hits:
            names = sorted({*parts, *(o for _, o in known)})
            close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise InputError(f"{where}: --keep-float {pattern} matches no layer of the quantized "
                             f"model; {hint}give a Keras layer or node name (a layer TFLite "
                             "fused into its neighbour's op goes by that one's), a regular "
                             "expression or an op type such as CONV_2D")
        nodes.extend(t for t in hits if t not in nodes)
    return nodes, ops


def holding(graph_def, layer: str, known: list[tuple[str, str]],
            keras: str | None = None) -> list[str]:
    """The tensors of the ops (`known`, as `layers` gives them) that hold Keras layer `layer`'s
    computation when no op kept one of its names: the first nodes downstream of the layer's
    nodes in `graph_def` that some op is named by (a part of its fused name; a batch norm
    folded into a layer names it `<the norm's output>/folded`)."""
    from graphfreeze.graph.graphdefs import is_control, split_tensor

    owner = {re.sub(r"/folded\d*$", "", p): t for t, _ in known for p in t.split(";")}
    members = layer_members([n.name for n in graph_def.node], layer, keras)
    users: dict[str, list[str]] = {}
    for node in graph_def.node:
        for name in node.input:
            if not is_control(name):
                users.setdefault(split_tensor(name)[0], []).append(node.name)
    found, seen, queue = [], set(members), list(members)
    while queue and not found:  # breadth first: the nearest named ops
        ahead = []
        for name in queue:
            for user in users.get(name, ()):
                if user in owner and owner[user] not in found:
                    found.append(owner[user])
                elif user not in seen:
                    seen.add(user)
                    ahead.append(user)
        queue = ahead
    return found


RANGES = ("minmax", "average")
SMOOTHING = 0.95  # ai-edge-quantizer's moving-average weight


def averaged_ranges(calibrated: bytes, samples: list, names=(),
                    smoothing: float = SMOOTHING) -> bytes:
    """The calibrated model with each activation's range the moving average of its per-sample
    min/max (as ai-edge-quantizer and QAT's moving averages do) in place of TensorFlow's min/max
    over every sample, which one outlier widens for every value: the quantizer then spends its
    256 steps on what the layer usually carries."""
    from graphfreeze.formats.tflite.litert_calibration import runs, span, with_ranges
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(calibrated))
    recorded = [i for i, t in enumerate(model.subgraphs[0].tensors) if t.quantization is not None
                and t.quantization.min is not None and len(t.quantization.min) == 1]
    ranges: dict[int, tuple[float, float]] = {}
    for interp in runs(calibrated, samples, names):
        for i in recorded:
            if (found := span(interp, i)) is None:
                continue
            low, high = found
            old = ranges.get(i)
            ranges[i] = (low, high) if old is None else \
                (smoothing * old[0] + (1 - smoothing) * low,
                 smoothing * old[1] + (1 - smoothing) * high)
    return with_ranges(calibrated, ranges)
