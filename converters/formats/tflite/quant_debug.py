"""Per-layer quantization error, measured by TensorFlow's own
`tf.lite.experimental.QuantizationDebugger` (worst layers first), so a user can pick layers to
keep in float.

What TensorFlow's debugger can measure: only full-integer (int8 activations) quantization. It
converts with `_experimental_calibrate_only`, then `mlir_quantize(enable_numeric_verify=True)`
puts a NumericVerify op after every quantized op, which compares the op's int8 output with the
float op run on the same (dequantized) input. It has no mode for dynamic-range or float16
conversion. So for `int8` the table is this artifact's quantization (same calibration samples,
int8 inputs/outputs); for `dynamic` and `fp16` it is each layer's sensitivity to full int8, on
the same representative samples: a hint of which layers would suffer, not the artifact's error.

The ranking metric is TensorFlow's guide's `rmse/scale` = sqrt(mean_squared_error) / the
output's quantization scale: about 0.29 (1/sqrt(12)) is plain rounding; well above it, the
layer loses more than rounding (clipped ranges, coarse weights).
"""

from __future__ import annotations

import math

TOP = 20
DEBUG_SAMPLES = 32  # debug run on the first 32 calibration samples: per-layer means settle
ROUNDING = 1 / math.sqrt(12)  # rmse/scale of a layer that only rounds
MEASURES = {
    "int8": "this artifact's int8 quantization, per layer",
    "dynamic": "each layer's sensitivity to full int8 (TensorFlow's QuantizationDebugger "
               "debugs full-integer quantization only, not dynamic range)",
    "fp16": "each layer's sensitivity to full int8 (TensorFlow's QuantizationDebugger debugs "
            "full-integer quantization only, not float16)",
    "int16x8": "each layer's sensitivity to full int8 (TensorFlow's QuantizationDebugger "
               "debugs int8 activations only, not int16)",
}


def layer_table(conv, samples: list, nodes=frozenset(), top: int = TOP,
                debug_samples: int = DEBUG_SAMPLES) -> list[dict]:
    """Run TensorFlow's QuantizationDebugger on `conv` (a converter with Optimize.DEFAULT,
    calibrated on all of `samples`) over the first `debug_samples` of them; the per-layer rows,
    worst `rmse/scale` first, at most `top`. `tensor` is TF's name for the quantized op's output
    (what QuantizationDebugOptions(denylisted_nodes=...) takes), `layer` the nodes of the graph
    (`nodes`) it fused."""
    import tensorflow as tf
    from graphfreeze.process.quiet import native_stderr_off

    with native_stderr_off():
        debugger = tf.lite.experimental.QuantizationDebugger(
            converter=conv, debug_dataset=lambda: iter(samples[:debug_samples]))
        debugger.run()
    return _table(debugger, nodes, top)


def rows_of_model(calibrated: bytes, samples: list, nodes=frozenset(), per_tensor: bool = False,
                  keep_nodes=(), keep_ops=(), debug_samples: int = DEBUG_SAMPLES) -> list[dict]:
    """Every per-layer row, worst first, of TensorFlow's debugger on a model quantized from an
    already `calibrated` one (no second calibration)."""
    import tensorflow as tf
    from graphfreeze.process.quiet import native_stderr_off
    from tensorflow.lite.python.convert import mlir_quantize

    with native_stderr_off():
        debug_model = mlir_quantize(calibrated, disable_per_channel=per_tensor,
                                    enable_numeric_verify=True,
                                    denylisted_nodes=list(keep_nodes) or None,
                                    denylisted_ops=list(keep_ops) or None)
        debugger = tf.lite.experimental.QuantizationDebugger(
            quant_debug_model_content=debug_model,
            debug_dataset=lambda: iter(samples[:debug_samples]))
        debugger.run()
    return _table(debugger, nodes, None)


def _table(debugger, nodes, top: int | None) -> list[dict]:
    import csv
    import io

    text = io.StringIO()
    debugger.layer_statistics_dump(text)  # TF's own table: op, metrics, scale, tensor name
    rows = [_row(r, nodes) for r in csv.DictReader(io.StringIO(text.getvalue()))]
    rows.sort(key=_badness, reverse=True)
    return rows if top is None else rows[:top]


def _row(raw: dict, nodes) -> dict:
    """One CSV row of TF's dump as JSON-safe numbers (None for NaN or infinity)."""
    scale, mse = _finite(raw["scale"]), _finite(raw["mean_squared_error"])
    ratio = math.sqrt(mse) / scale if scale and mse is not None else None
    return {"tensor": raw["tensor_name"], "layer": _layer(raw["tensor_name"], nodes),
            "op": raw["op_name"],
            "rmse/scale": None if ratio is None else round(ratio, 4),
            "mean_error": _finite(raw["mean_error"]), "max_abs_error": _finite(raw["max_abs_error"]),
            "mean_squared_error": mse, "scale": scale, "zero_point": int(float(raw["zero_point"]))}


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _badness(row: dict) -> float:
    return -1.0 if row["rmse/scale"] is None else row["rmse/scale"]


def _layer(tensor: str, nodes) -> str:
    """The graph nodes among the names TFLite joined with ';' for a fused op (a name the
    converter made unique with a trailing digit, e.g. MatMul_21 for MatMul_2, mapped back);
    the first name when none is a node (batch norms folded into a convolution are not)."""
    parts = tensor.split(";")
    found = [p if p in nodes else p[:-1] for p in parts
             if p in nodes or (p[-1:].isdigit() and p[:-1] in nodes)]
    return ";".join(dict.fromkeys(found)) or parts[0]


def summary_line(rows: list[dict], quantize: str, shown: int = 3) -> str:
    """One line for the CLI: the worst few layers (the first node of a fused op, which
    --keep-float takes) and their rmse/scale."""
    head = "worst quantized layers" if quantize == "int8" else \
        "layers most sensitive to int8 (TF's debugger measures full int8 only)"
    parts = [f"{r['layer'].split(';')[0]} ({'rmse/scale ' if k == 0 else ''}"
             f"{_number(r['rmse/scale'])})"
             for k, r in enumerate(rows[:shown])]
    return f"{head}: {', '.join(parts)}; {ROUNDING:.2f} is rounding alone"


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def overlay_values(rows: list[dict]) -> dict:
    """{TFLite tensor: (rmse/scale, rmse/scale over rounding's 0.29)}: the per-layer error the
    Model Explorer overlay shows (explain/overlay.py), keyed by the quantized op's output tensor
    (TF's debugger names it as the artifact does); layers it could not measure are left out."""
    return {r["tensor"]: (r["rmse/scale"], r["rmse/scale"] / ROUNDING) for r in rows
            if r.get("rmse/scale") is not None}
