"""int8 and float16 versions of the float ONNX model, made by onnxruntime's own tools.

int8: `quantize_static` (QDQ, per-channel weights, int8 activations and weights) calibrated on
the samples `CalibrationOptions.samples` gives. A QAT model's Q/DQ (its learned ranges) are kept:
only the weighted ops no fake quantization covers are quantized, and none when all are.
fp16: `convert_float_to_float16` with float32 inputs and outputs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

QUANTIZE = ("none", "int8", "fp16")
WEIGHTED = ("Conv", "ConvTranspose", "MatMul", "Gemm")  # ops with weights to make int8


def uncovered(model) -> list[str]:
    """Weighted nodes no Q/DQ already covers (none of their inputs dequantized, no output
    quantized): all of them in a float model, what a partly QAT model left float."""
    dequantized = {o for n in model.graph.node if n.op_type == "DequantizeLinear"
                   for o in n.output}
    quantized = {n.input[0] for n in model.graph.node if n.op_type == "QuantizeLinear"}
    return [n.name for n in model.graph.node if n.op_type in WEIGHTED
            and not dequantized.intersection(n.input) and not quantized.intersection(n.output)]


class _Samples:
    """onnxruntime's CalibrationDataReader over [array per input] samples."""

    def __init__(self, names: list[str], samples: list[list]):
        self._feeds = iter([dict(zip(names, s, strict=True)) for s in samples])

    def get_next(self):
        return next(self._feeds, None)


def to_int8(model, inputs, samples, nodes: list[str] | None = None):
    """`model` (an onnx ModelProto; a large one's weights are moved out to a temporary file)
    statically quantized to int8 QDQ; `nodes`: only these (default: every op it takes)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    CalibrationDataReader.register(_Samples)
    with tempfile.TemporaryDirectory(prefix="graphfreeze-int8-") as tmp, _advice_off():
        src, out = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
        large = model.ByteSize() > (1 << 30)
        onnx.save_model(model, src, save_as_external_data=large)
        if nodes is None:
            src = _preprocessed(src, os.path.join(tmp, "pre.onnx"), large)
        quantize_static(src, out, _Samples([i.name for i in inputs], samples),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        nodes_to_quantize=nodes, use_external_data_format=large)
        result = onnx.load(out)
    del result.graph.value_info[:]  # the quantizer's shape inference; runtimes infer their own
    _rename_removed_activations(result, {o for n in model.graph.node
                                         if n.op_type in ("Relu", "Clip") for o in n.output})
    return result


def _rename_removed_activations(model, activations: set[str]) -> None:
    """The quantizer drops a Relu/Clip before a QuantizeLinear (whose range clips) and gives its
    name to the unclipped tensor; the divergence locator, comparing by name, would compare that
    with TensorFlow's Relu. The unclipped tensor becomes NAME/unclipped and the dequantized one,
    which is what the Relu computes, NAME."""
    nodes = model.graph.node
    producer = {o: n for n in nodes for o in n.output}
    for name in activations:
        if name not in producer or producer[name].op_type in ("Relu", "Clip"):
            continue
        readers = [n for n in nodes if name in n.input]
        if not readers or any(n.op_type != "QuantizeLinear" for n in readers):
            continue
        rename = {name: f"{name}/unclipped"}
        rename.update((n.output[0], name) for n in nodes if n.op_type == "DequantizeLinear"
                      and n.input[0] == readers[0].output[0])
        for node in nodes:
            for field in (node.input, node.output):
                field[:] = [rename.get(x, x) for x in field]


def _preprocessed(src: str, dest: str, large: bool) -> str:
    """onnxruntime's `quant_pre_process` (milliseconds: its basic optimizations fuse MatMul +
    Add into Gemm, one Q/DQ pair fewer per dense layer; no symbolic shapes, which need sympy);
    `src` as it is if that fails. Not for a partial quantization: it renames nodes, and would
    fold a QAT model's constant DequantizeLinear weights back to float."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    try:
        quant_pre_process(src, dest, skip_symbolic_shape=True, save_as_external_data=large)
    except Exception:  # noqa: BLE001 -- an optional step: quantize the model as it is
        return src
    return dest


@contextlib.contextmanager
def _advice_off():
    """The quantizer logs advice ("consider pre-processing") on the root logger, and its
    calibration session native warnings: off unless logs are on (--debug)."""
    import logging

    import onnxruntime as ort
    from graphfreeze.process.quiet import logs_off

    root, level = logging.getLogger(), logging.getLogger().level
    if not logs_off():
        yield
        return
    root.setLevel(logging.ERROR)
    ort.set_default_logger_severity(3)
    try:
        yield
    finally:
        root.setLevel(level)
        ort.set_default_logger_severity(2)  # onnxruntime's default: warnings


def to_fp16(model):
    """`model` with float16 weights and activations; inputs and outputs stay float32, and so do
    Q/DQ (a QAT model's: float16 scales need opset 19)."""
    from onnx import helper
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

    constant = {t.name: t for t in model.graph.initializer}
    for out in model.graph.output:  # the converter loses an output no node makes: give it one
        if out.name in constant:
            constant[out.name].name = f"{out.name}/value"
            model.graph.node.append(helper.make_node("Identity", [f"{out.name}/value"],
                                                     [out.name], name=f"{out.name}/identity"))
    model = convert_float_to_float16(model, keep_io_types=True, op_block_list=[
        *DEFAULT_OP_BLOCK_LIST, "QuantizeLinear", "DequantizeLinear"])
    topo_sort(model.graph)  # the converter appends the Casts it adds, after their consumers
    return model


def _subgraphs(node):
    for attr in node.attribute:
        yield from ([attr.g] if attr.HasField("g") else [])
        yield from attr.graphs


def _used(graph) -> set[str]:
    """Every tensor name nodes of `graph` and its subgraphs read (outer-scope ones included)."""
    return {x for n in graph.node for x in n.input}.union(
        *(_used(g) for n in graph.node for g in _subgraphs(n)))


def topo_sort(graph) -> None:
    """Order `graph`'s nodes (and its subgraphs') so each comes after what it reads, keeping the
    given order where it already is (Kahn's algorithm, lowest index first)."""
    import heapq

    for node in graph.node:
        for sub in _subgraphs(node):
            topo_sort(sub)
    nodes = list(graph.node)
    producer = {out: i for i, n in enumerate(nodes) for out in n.output if out}
    users: list[list[int]] = [[] for _ in nodes]
    pending = [0] * len(nodes)
    for i, node in enumerate(nodes):
        reads = set(node.input).union(*(_used(g) for g in _subgraphs(node)))
        for j in {producer[x] for x in reads if x in producer and producer[x] != i}:
            users[j].append(i)
            pending[i] += 1
    ready = [i for i, count in enumerate(pending) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for k in users[i]:
            pending[k] -= 1
            if pending[k] == 0:
                heapq.heappush(ready, k)
    if len(order) == len(nodes):  # else a cycle: leave it for onnx.checker to name
        del graph.node[:]
        graph.node.extend(nodes[i] for i in order)


def apply(state, options, model, inputs, qat: bool):
    """(model, facts, warnings): `model` as `options.quantize` asks; `qat`: it has Q/DQ already
    (fake quantization), whose learned ranges int8 keeps. A partly QAT model's unannotated ops
    stay float, as TFLiteConverter keeps them (edge-int8 does the same)."""
    if options.quantize == "fp16":
        return to_fp16(model), {"quantize": "fp16"}, []
    if options.quantize != "int8":
        return model, {"quantize": options.quantize}, []
    if qat:
        nodes = uncovered(model)
        return model, {"quantize": "int8", **({"kept_float": nodes} if nodes else {})}, [
            f"{state.target}: {len(nodes)} op(s) the QAT model does not annotate "
            f"({', '.join(nodes[:2])}) stay float, as TFLiteConverter keeps them; annotate them "
            "(tfmot quantize_annotate_layer) for a full-integer model"] if nodes else []
    if not inputs:  # onnxruntime's calibrator needs feeds
        return model, {"quantize": "none"}, [
            f"{state.target}: the graph has no inputs (its outputs are constants), so there is "
            "nothing to calibrate; written as float"]
    try:
        model = to_int8(model, inputs, calibration(state, options, inputs))
    except Exception as err:  # noqa: BLE001 -- onnxruntime's quantizer raises anything
        from graphfreeze.errors import GraphFreezeError, InputError, first_line

        if isinstance(err, GraphFreezeError):
            raise
        raise InputError(f"{state.model.graph_file}: onnxruntime's quantizer fails on the model "
                         f"({first_line(err)}); use the onnx or onnx-fp16 target") from err
    facts = {"quantize": "int8", "calibration": options.calibration_data() or "synthetic"}
    if options.calibration_data() is not None:
        return model, facts, []
    return model, facts, [f"{state.target}: calibrated on {options.calibration_samples} "
                          "synthetic random inputs, so int8 accuracy on real data is unknown; "
                          "pass --calibration FILE.npz with real samples"]


def calibration(state, options, inputs, seed: int = 1) -> list[list]:
    """The samples int8 calibrates on, as edge-int8 takes them (domain-aware: the user's ids
    checked against the tables they index, seeded ids and masks within their ranges), in runs
    of the inputs' fixed batch when they have one (onnxruntime feeds each as it is)."""
    import numpy as np

    found = options.samples(inputs, seed)
    fixed = {info.shape[0] if info.shape and len(info.shape) > 1 else None for info in inputs}
    batch = fixed.pop() if len(fixed) == 1 else None
    if not batch or not found or all(np.shape(v)[0] == batch for v in found[0]):
        return found  # no fixed batch, or samples of that batch already (seeded)
    rows = [found[(k + j) % len(found)] for k in range(0, len(found), batch)
            for j in range(batch)]  # the last run filled from the first samples
    return [[np.concatenate(part) for part in zip(*rows[k:k + batch], strict=True)]
            for k in range(0, len(rows), batch)]
