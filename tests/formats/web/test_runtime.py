"""A browser session on a model with an op onnxruntime-web's wasm build has no kernel for: one
line naming the op (the model made with onnx's helper: com.microsoft's Rfft)."""

from __future__ import annotations

import onnx
import pytest
from graphfreeze.errors import RunError
from graphfreeze.formats.web.runtime import open_web
from graphfreeze.tensors import TensorInfo
from onnx import TensorProto, helper


def test_an_op_without_a_kernel_in_the_browser_is_named(tmp_path):
    path = tmp_path / "rfft.onnx"
    node = helper.make_node("Rfft", ["x:0"], ["y:0"], domain="com.microsoft", name="spectrum")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x:0", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y:0", TensorProto.FLOAT, [None, 4])])
    onnx.save(helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]), path)
    x = TensorInfo("x:0", "float32", (None, 4))
    session = open_web(str(path), [x], [TensorInfo("y:0", "float32", (None, 4))])
    import numpy as np

    with pytest.raises(RunError) as err:
        session.run({"x:0": np.zeros((2, 4), np.float32)})
    assert str(err.value).startswith("op Rfft (node 'spectrum') has no kernel in onnxruntime-web ")
    assert "wasm backend" in str(err.value)
