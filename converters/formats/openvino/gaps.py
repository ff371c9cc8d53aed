"""Which ops OpenVINO's TensorFlow frontend cannot take: its own judgement, read from the
"No conversion rule found for operations: A, B" summary it gives for a graph it cannot convert."""

from __future__ import annotations

import re

from graphfreeze.plugins import OpGaps

_NO_RULE = re.compile(r"No conversion rule found for operations?: ([^\n]+)")


def unconverted_ops(message: str) -> list[str]:
    """The op types an OpConversionFailure names ([] when it names none)."""
    match = _NO_RULE.search(message)
    return sorted({op.strip() for op in match.group(1).split(",") if op.strip()}) if match else []


def convert(graph_def, inputs=None, outputs=None):
    """`ov.convert_model` on a GraphDef; OpConversionFailure is raised as is."""
    import openvino as ov

    kwargs = {}
    if inputs:
        kwargs["input"] = [(name, ov.PartialShape([-1 if d is None else d for d in shape])
                            if shape is not None else ov.PartialShape.dynamic())
                           for name, shape in inputs]
    if outputs:
        kwargs["output"] = list(outputs)
    return ov.convert_model(graph_def, **kwargs)


def openvino_gaps(graph_def, ops: set[str]) -> OpGaps:
    """Convert the inference graph and read which of its ops OpenVINO says it cannot take."""
    from graphfreeze.errors import first_line

    try:
        convert(graph_def)
    except Exception as err:  # noqa: BLE001 -- OpConversionFailure, or another frontend error
        missing = [op for op in unconverted_ops(str(err)) if op in ops]
        if not missing:  # e.g. variables not frozen yet: not what the artifact would hold
            return OpGaps("openvino", [], f"openvino: not judged before freezing ({first_line(err)[:80]})")
        return OpGaps("openvino", missing, "openvino: " + ", ".join(missing))
    return OpGaps("openvino", [], "openvino: all ops convert")
