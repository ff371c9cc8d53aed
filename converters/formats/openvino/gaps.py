"""Which ops OpenVINO's TensorFlow frontend cannot take: its own judgement (`convert.py`)."""

from __future__ import annotations

from graphfreeze.formats.openvino.convert import convert, unconverted_ops
from graphfreeze.plugins import OpGaps


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
