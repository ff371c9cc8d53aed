"""A stand-in composite's outputs seen with its op's shapes (composites.as_references), on
Model Garden's TFLite post-processing detector, while the call itself stays nameable."""

from __future__ import annotations

from graphfreeze.graph.composites import as_references, composite_calls
from graphfreeze.names import TensorRef
from graphfreeze.tensors import tensor_infos


def test_outputs_take_the_ops_shapes_and_the_call_stays_nameable(family):
    from graphfreeze.sources.saved_model import load

    path, _ = family("detector_tflite_nms")
    graph_def = load(str(path)).graph_def
    (call,) = [c for c in composite_calls(graph_def) if c.stand_in]
    boxes, num, own = tensor_infos(graph_def, [TensorRef("detection_boxes"),
                                               TensorRef("num_detections"),
                                               TensorRef(call.node)])
    assert boxes.shape == (None, 10, 4) and num.shape == (None,)
    assert own.shape == ()  # the stand-in's own zeros, as --outputs naming the call gets them
    assert {n.name for n in as_references(graph_def).node} >= {call.node,
                                                                f"{call.node}/reference_0"}
