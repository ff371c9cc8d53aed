"""Which ops OpenVINO's TensorFlow frontend cannot take: its own judgement, read from the
"No conversion rule found for operations: A, B" summary it gives for a graph it cannot convert."""

from __future__ import annotations

import re

from graphfreeze.plugins import OpGaps

# its summary: ops with no rule, and ops whose rule failed (e.g. a variable not yet frozen)
_NO_RULE = re.compile(r"(?:No conversion rule found for operations?|Conversion is failed for): "
                      r"([^\n]+)")


def unconverted_ops(message: str) -> list[str]:
    """The op types an OpConversionFailure's summary names ([] when it names none)."""
    found = {op.strip() for match in _NO_RULE.finditer(message)
             for op in match.group(1).split(",") if op.strip()}
    return sorted(found)


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
    """Convert the inference graph and read which of its compute ops (`ops`) OpenVINO says it
    cannot take; ops outside `ops` (variables, savers: gone once frozen) do not count."""
    from graphfreeze.errors import first_line

    try:
        convert(graph_def)
    except Exception as err:  # noqa: BLE001 -- OpConversionFailure, or another frontend error
        listed = unconverted_ops(str(err))
        if not listed:  # failed for another reason: nothing to say per op
            return OpGaps("openvino", [], f"openvino: not judged ({first_line(err)[:100]})")
        missing = [op for op in listed if op in ops]
        return OpGaps("openvino", missing, "openvino: " + (", ".join(missing) or
                                                          "all ops convert"))
    return OpGaps("openvino", [], "openvino: all ops convert")
