"""Which ops OpenVINO's TensorFlow frontend cannot take: its own judgement (`convert.py`)."""

from __future__ import annotations

from graphfreeze.formats.openvino.convert import unconverted_ops
from graphfreeze.plugins import OpGaps


def openvino_gaps(graph_def, ops: set[str]) -> OpGaps:
    """Convert the probe of `ops` (one node of each, `formats.probe`; the whole inference graph
    when some op cannot be probed) and read which of the compute ops (`ops`) OpenVINO says it
    cannot take; ops outside `ops` (variables, savers: gone once frozen) do not count."""
    from graphfreeze.errors import first_line
    from graphfreeze.formats.probe import probe_graph

    probe = probe_graph(graph_def, ops)
    try:
        _frontend_convert(probe.graph if set(probe.checked) == set(ops) else graph_def)
    except Exception as err:  # noqa: BLE001 -- OpConversionFailure, or another frontend error
        listed = unconverted_ops(str(err))
        if not listed:  # failed for another reason: nothing to say per op
            return OpGaps("openvino", [], f"openvino: not judged ({first_line(err)[:100]})")
        missing = [op for op in listed if op in ops]
        return OpGaps("openvino", missing, "openvino: " + (", ".join(missing) or
                                                          "all ops convert"))
    return OpGaps("openvino", [], "openvino: all ops convert")


def _frontend_convert(graph_def):
    """OpenVINO's TensorFlow frontend alone on a GraphDef (what `ov.convert_model` runs before
    its model-wide optimizations, which judge nothing and grow faster than the graph)."""
    import tensorflow as tf
    from openvino.frontend import FrontEndManager
    from openvino.frontend.tensorflow.graph_iterator import GraphIteratorTFGraph

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    frontend = FrontEndManager().load_by_framework("tf")
    iterator = GraphIteratorTFGraph(graph, True)  # kept alive while the frontend reads it
    model = frontend.load(iterator)
    return frontend.convert(model)
