"""fill_io_shapes: graph outputs tf2onnx leaves without a shape get ONNX's inferred shape, else
TensorFlow's; an output whose rank nobody knows stays as it is."""

from __future__ import annotations

import numpy as np
import onnx
from graphfreeze.formats.onnx.shapes import fill_io_shapes
from graphfreeze.tensors import TensorInfo
from onnx import TensorProto, helper, numpy_helper


def _model(op_type: str, domain: str = ""):
    weights = numpy_helper.from_array(np.ones((5000, 4), np.float32), "embedding")  # > 4 KB
    nodes = [helper.make_node("Gather", ["embedding", "ids"], ["rows"]),
             helper.make_node(op_type, ["rows"], ["out"], domain=domain)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("rows", TensorProto.FLOAT, None)], [weights])
    opsets = [helper.make_opsetid("", 18)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets)


def _dims(value):
    return [d.dim_value or d.dim_param or None for d in value.type.tensor_type.shape.dim]


def test_onnx_inference_fills_the_shape_and_the_weights_are_untouched():
    model = _model("Relu")
    before = model.graph.initializer[0].SerializeToString()
    fill_io_shapes(model, [TensorInfo("out", "float32", (None, 9))])  # ONNX's own comes first
    assert _dims(model.graph.output[0]) == ["n", 4] and _dims(model.graph.output[1]) == ["n", 4]
    assert model.graph.initializer[0].SerializeToString() == before
    onnx.checker.check_model(model)


def test_tensorflows_shape_where_onnx_infers_none_and_unknown_rank_stays():
    model = _model("Unknown", domain="custom.domain")  # ONNX cannot infer a custom op
    fill_io_shapes(model, [TensorInfo("out", "float32", (None, 4)),
                           TensorInfo("rows", "float32", None)])
    assert _dims(model.graph.output[0]) == [None, 4]
    assert _dims(model.graph.output[1]) == ["n", 4]  # ONNX infers the Gather itself
    bare = _model("Unknown", domain="custom.domain")
    fill_io_shapes(bare, [TensorInfo("out", "float32", None)])
    assert not bare.graph.output[0].type.tensor_type.HasField("shape")
