"""Which ops OpenVINO's TensorFlow frontend cannot take: its own judgement (`convert.py`)."""

from __future__ import annotations

from graphfreeze.formats.openvino import tokenizers
from graphfreeze.formats.openvino.convert import readable, unconverted_ops
from graphfreeze.plugins import OpGaps


def openvino_gaps(graph_def, ops: set[str]) -> OpGaps:
    """Convert the probe of `ops` (one node of each, `formats.probe`; the whole inference graph
    when some op cannot be probed or the probe fails without naming ops) and read which of the
    compute ops (`ops`) OpenVINO says it cannot take; ops outside `ops` (variables, savers: gone
    once frozen) do not count."""
    from graphfreeze.errors import first_line
    from graphfreeze.graph.op_probe import probe_graph

    probe = probe_graph(graph_def, ops)
    whole = set(probe.checked) != set(ops)
    err = None if whole else _conversion_error(probe.graph)
    if whole or (err is not None and not unconverted_ops(str(err))):
        err = _conversion_error(graph_def)
    if err is None:
        return OpGaps("openvino", [], "openvino: all ops convert")
    listed = unconverted_ops(str(err))
    if not listed:  # failed for another reason: nothing to say per op
        return OpGaps("openvino", [], f"openvino: not judged ({first_line(err)[:100]})")
    missing = [op for op in listed if op in ops]
    return OpGaps("openvino", missing, "openvino: " + (", ".join(missing) or "all ops convert"))


def _conversion_error(graph_def) -> Exception | None:
    """What OpenVINO's TensorFlow frontend raises on a GraphDef (None: it converts). The
    frontend alone: `ov.convert_model`'s model-wide optimizations judge nothing and grow faster
    than the graph."""
    from openvino.frontend import FrontEndManager

    if tokenizers.needed(graph_def):
        tokenizers.load()
    try:
        frontend = FrontEndManager().load_by_framework("tf")
        with readable(graph_def) as path:
            frontend.convert(frontend.load(path))
    except Exception as err:  # noqa: BLE001 -- OpConversionFailure, or another frontend error
        return err
    return None
