"""Held-out Keras models of issue 43 (models/keras_held_out.py) through the `freeze` CLI in the
model's folder: keras-hub DeepLabV3ImageSegmenters whose image size is unknown are traced at the
size they declare (their preprocessor's, their image encoder's); one that declares none is
refused as graphfreeze's limitation, not as a corrupt file."""

from __future__ import annotations

import json

import pytest

from tests.conftest import _shared, _zoo_builder
from tests.e2e.test_bad_input import assert_failed


@pytest.fixture(scope="session")
def keras_held_out(tmp_path_factory):
    """keras_held_out(name) -> (model path, extra freeze args), built on first use."""
    return _zoo_builder(_shared(tmp_path_factory, "keras_held_out"), "keras_held_out.py")


def _car(folder, name: str) -> dict:
    return json.loads((folder / f"{name}.json").read_text())


@pytest.mark.parametrize(("name", "declared"), [
    ("deeplab_preprocessed", "its preprocessor's image_size"),
    ("deeplab_encoder_sized", "the input of its nested model")])
def test_deeplab_segmenter_traces_at_the_size_it_declares(keras_held_out, freeze, tmp_path,
                                                          monkeypatch, name, declared):
    """Was `TensorFlow cannot trace this Keras model (• inputs=…256…); the file is corrupt`:
    UpSampling2D cannot resize an image of unknown size in a graph; traced at the declared
    32x32 (batch still free), every target verifies and the sidecar says where the size came
    from."""
    path, args = keras_held_out(name)
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android,tflite,edge-int8,onnx", "-o",
                    f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    for artifact in ("model.pb", "model.tflite", "model.edge-int8.tflite", "model.onnx"):
        car = _car(tmp_path, artifact)
        assert car["verification"]["passed"], (artifact, car["verification"])
        assert car["inputs"][0]["shape"][1:] == [32, 32, 3], car["inputs"]
        traced = car["source"]["traced_at"]
        assert traced["shapes"] == [[None, 32, 32, 3]] and traced["from"].startswith(declared)


def test_deeplab_segmenter_of_no_declared_size_is_our_limitation(keras_held_out, freeze,
                                                                 tmp_path, monkeypatch):
    """Keras reads the file: the refusal names the layer, why, and the fix, never 'corrupt'."""
    path, args = keras_held_out("deeplab_unsized")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "tflite", "-o", f"{tmp_path}/")
    assert_failed(result, 3, "model.keras: graphfreeze cannot trace", "UpSampling2D",
                  "(None, None, None, 3)", "image_shape=")
    assert "corrupt" not in result.output and "another Keras" not in result.output


def test_keras_quantized_model_converts_with_its_int8_kernels(keras_held_out, freeze, tmp_path,
                                                             monkeypatch):
    """`model.quantize("int8")` computes Dense and EinsumDense as int8 x int8 -> int32
    BatchMatMulV3: TFLite refused it (`tfl.fully_connected` ... got 'tensor<1x8x16xi8>') and
    OpenVINO's product overflowed; computed in float on the integers, every target verifies
    against the quantized Keras model, and edge-int8 holds Keras' own int8 kernels (scale 1)."""
    import keras
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    path, args = keras_held_out("quantized_attention")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android,tflite,edge-int8,onnx,openvino", "-o",
                    f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    for artifact in ("model.pb", "model.tflite", "model.edge-int8.tflite", "model.onnx",
                     "model.xml"):
        assert _car(tmp_path, artifact)["verification"]["passed"], artifact
    model = keras.saving.load_model(path)
    kernels = {layer.name: np.asarray(layer._kernel) for layer in model.layers  # noqa: SLF001
               if hasattr(layer, "_kernel")}
    assert len(kernels) == 5 and all(k.dtype == np.int8 for k in kernels.values())
    interpreter = Interpreter(model_path=str(tmp_path / "model.edge-int8.tflite"))
    stored = []  # the int8 constants (activations have no data before a run)
    for detail in interpreter.get_tensor_details():
        scales = detail["quantization_parameters"]["scales"]
        if detail["dtype"] == np.int8 and len(detail["shape"]) == 2 and len(scales):
            try:
                stored.append((interpreter.get_tensor(detail["index"]), scales))
            except ValueError:
                continue
    for name, kernel in kernels.items():
        flat = kernel.reshape(kernel.shape[0], -1)
        assert any(np.array_equal(v, flat.T) and np.all(s == 1) for v, s in stored), name


def test_keras_quantized_model_keras_cannot_reload_is_said_so(keras_held_out, freeze, tmp_path,
                                                             monkeypatch):
    """keras.saving.load_model itself fails on a quantized MultiHeadAttention: one line naming
    its EinsumDense layers and what to convert instead."""
    path, args = keras_held_out("quantized_mha")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "tflite", "-o", f"{tmp_path}/")
    assert_failed(result, 3, "model.keras: Keras itself cannot load this model back",
                  "EinsumDense query", "saved before model.quantize()")


def test_keep_float_a_layer_fused_into_its_neighbour(keras_held_out, freeze, tmp_path,
                                                     monkeypatch):
    """MobileNetV2's Conv1 has no op of its own in the .tflite (its batch norm folded into it,
    its ReLU6 fused: `…/Conv1_relu_1/Relu6;…/bn_Conv1_1/batchnorm/add_1/folded`): --keep-float
    Conv1 keeps that CONV_2D in float and says which op it is (was `matches no layer of the
    quantized model`)."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    path, args = keras_held_out("mobilenet_v2")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "edge-int8", "--keep-float", "Conv1", "-o",
                    f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "--keep-float Conv1" in line]
    assert len(said) == 1 and "kept the CONV_2D that holds it" in said[0], result.output
    car = _car(tmp_path, "model.edge-int8.tflite")
    assert car["verification"]["passed"], car["verification"]
    (kept,) = car["keep_float"]
    assert kept in said[0] and "Conv1_relu" in kept, (kept, said)
    interpreter = Interpreter(model_path=str(tmp_path / "model.edge-int8.tflite"))
    tensors = {d["index"]: d for d in interpreter.get_tensor_details()}
    convs = [op for op in interpreter._get_ops_details()  # noqa: SLF001
             if tensors[int(op["outputs"][0])]["name"] == kept]
    assert [op["op_name"] for op in convs] == ["CONV_2D"], convs
    assert all(tensors[int(i)]["dtype"] == np.float32 for i in convs[0]["inputs"] if i >= 0)


def test_a_subclassed_model_is_refused_in_one_line(keras_held_out, freeze, tmp_path,
                                                   monkeypatch):
    """A subclassed keras.Model has no `.inputs`: refused as graphfreeze's limitation (was an
    internal error: AttributeError reading `model.inputs`), nothing written."""
    path, args = keras_held_out("subclassed")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android", "-o", f"{tmp_path}/out/")
    assert_failed(result, 3, "model.keras: graphfreeze cannot trace", "subclassed model")
    assert "corrupt" not in result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
