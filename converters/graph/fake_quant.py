"""The fake-quantization ops of quantization-aware trained (QAT) graphs and their ranges.

Constant folding keeps them: the TFLite converter reads a QAT weight's learned range from its
FakeQuant, and the ONNX export (tf2onnx folds them itself) stores a weight whose folded values
lie on its range's grid as int8 plus DequantizeLinear -- given float weights next to quantized
activations, onnxruntime would re-quantize them with scales of its own.
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
