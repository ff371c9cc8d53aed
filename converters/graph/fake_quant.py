"""Quantization ranges of fake-quant nodes, noted before constant folding bakes them in.

A QAT model's weights go through FakeQuant ops whose inputs are all constants once frozen, so
`fold_constants` replaces each by its (exact) float result and the grid it lies on is gone. The
onnx target runs `note_fake_quant_ranges` first: the export stage then writes those folded
weights as integers plus DequantizeLinear (what ONNX runtimes expect of a QDQ model; given float
weights next to quantized activations, onnxruntime re-quantizes them with its own scales).
"""

from __future__ import annotations

from graphfreeze.graph.consts import const_value
from graphfreeze.graph.graphdefs import nodes_by_name

FAKE_QUANT_OPS = ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars",
                  "FakeQuantWithMinMaxVarsPerChannel")


def fake_quant_ranges(graph_def) -> dict[str, dict]:
    """{node: {min, max, num_bits, narrow_range, per_channel}} for every fake-quant node whose
    range is constant (min/max as lists of floats)."""
    by_name = nodes_by_name(graph_def)
    ranges = {}
    for node in graph_def.node:
        if node.op not in FAKE_QUANT_OPS:
            continue
        if node.op == "FakeQuantWithMinMaxArgs":
            lo, hi = node.attr["min"].f, node.attr["max"].f
        else:
            lo, hi = (const_value(by_name, t) for t in node.input[1:3])
            if lo is None or hi is None:
                continue
            lo, hi = lo.astype("float32").ravel().tolist(), hi.astype("float32").ravel().tolist()
        ranges[node.name] = {"min": lo, "max": hi, "num_bits": node.attr["num_bits"].i or 8,
                             "narrow_range": node.attr["narrow_range"].b,
                             "per_channel": node.op.endswith("PerChannel")}
    return ranges


def note_fake_quant_ranges(graph_def, keep: list[str]):
    """The graph unchanged; the pass runner stores `fake_quant_ranges` in the run's notes."""
    del keep
    return graph_def
