"""`freeze reduce`'s repro script, the OpenVINO part: `convert_model` on the reduced `.pb`,
compiled for the CPU in float32 (reduce/stock.py writes the rest)."""

from __future__ import annotations

OPENVINO = '''
sys.modules.setdefault("openvino_telemetry", None)  # OpenVINO's usage events off: its own stub
import openvino as ov

try:
    model = ov.convert_model(PB, input=[(k + ":0", ov.PartialShape(
        [-1 if d is None else d for d in v])) for k, v in INPUTS.items()],
        output=[k + ":0" for k in OUTPUTS])
    compiled = ov.Core().compile_model(model, "CPU", {{"INFERENCE_PRECISION_HINT": "f32"}})
except Exception as err:  # OpConversionFailure
    failed(err)


def converted(feeds):
    result = compiled({{k + ":0": v for k, v in feeds.items()}})
    return [result[compiled.output(k + ":0")] for k in OUTPUTS]
'''


def script(options, pb: str, inputs, outputs, compare: bool) -> str:
    """The conversion and `converted(feeds)`, as `ov.convert_model` does it."""
    return OPENVINO.format()
