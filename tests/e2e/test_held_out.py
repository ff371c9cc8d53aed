"""Held-out inputs of issue 43 that were internal errors (models/held_out.py): a SavedModel of a
pure concrete function with a scalar input, tf2onnx's simple while loop (scalar in, TF2 and TF1
control flow, frozen and SavedModel), a TFLite-NMS detector with a `[1, ?, ?, 3]` image, and a
Keras 3 model trained under `mixed_float16`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import _shared, _zoo_builder


@pytest.fixture(scope="session")
def held_out(tmp_path_factory):
    """held_out(name) -> (model path, extra freeze args), built on first use (read-only use)."""
    return _zoo_builder(_shared(tmp_path_factory, "held_out"), "held_out.py")


def _verified(folder, *names):
    for name in names:
        car = json.loads((folder / f"{name}.json").read_text())
        assert car["verification"]["passed"], (name, car["verification"])


def test_pure_function_with_a_scalar_input_converts(held_out, freeze, tmp_path, monkeypatch):
    """Its scalar `scale` is one row of seeded data (was `len() of unsized object`)."""
    path, args = held_out("pure_function")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android,tflite,onnx,openvino", "-o",
                    f"{tmp_path}/", "--save-golden", f"{tmp_path}/golden")
    assert result.exit_code == 0, result.output
    _verified(tmp_path, "saved_model.pb", "saved_model.tflite", "saved_model.onnx",
              "saved_model.xml")
    rows = len(np.load(tmp_path / "golden" / "golden.npz")["input:x:0"])
    assert rows > 1 and json.loads((tmp_path / "golden" / "golden.json").read_text())["rows"] \
        == rows  # the rows of `x`, not of the scalar listed first
    again = freeze("verify", f"{tmp_path}/saved_model.tflite", "--golden", f"{tmp_path}/golden")
    assert again.exit_code == 0, again.output


def test_constant_outputs_reach_every_format(held_out, freeze, tmp_path, monkeypatch):
    """Outputs no input reaches are Const nodes once folded; OpenVINO's frontend dropped them
    (an internal KeyError), they are results of their values now."""
    path, args = held_out("constant_outputs")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android,tflite,onnx,openvino", "-o",
                    f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    _verified(tmp_path, "saved_model.pb", "saved_model.tflite", "saved_model.onnx",
              "saved_model.xml")
    car = json.loads((tmp_path / "saved_model.xml.json").read_text())
    assert {o["name"] for o in car["outputs"]} == {"anchors:0", "classes:0", "y:0"}


@pytest.mark.parametrize("name", ["simple_while_pb", "simple_while_v1_pb",
                                  "simple_while_saved_model"])
def test_tf2onnx_simple_while_loop_converts(held_out, freeze, tmp_path, monkeypatch, name):
    path, args = held_out(name)
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android,server,tflite,onnx,openvino", "-o",
                    f"{tmp_path}/", "--save-golden", f"{tmp_path}/golden")
    assert result.exit_code == 0, result.output
    stem = path.name.removesuffix(".pb") + (".optimized" if path.suffix == ".pb" else "")
    _verified(tmp_path, *(f"{stem}{ext}" for ext in (".pb", ".savedmodel", ".tflite", ".onnx",
                                                     ".xml")))
    golden = json.loads((tmp_path / "golden" / "golden.json").read_text())
    assert golden["rows"] == 1 and golden["inputs"][0]["shape"] == [], golden
    again = freeze("verify", f"{tmp_path}/{stem}.onnx", "--golden", f"{tmp_path}/golden")
    assert again.exit_code == 0, again.output


def test_tflite_nms_detector_with_a_dynamic_image_converts(held_out, freeze, tmp_path,
                                                          monkeypatch):
    """The composite's SavedModel takes the image's unknown height and width as unknown (was
    `Dimension -1 must be >= 0`); the .tflite keeps them dynamic and runs the 32x32 images."""
    from ai_edge_litert.interpreter import Interpreter

    path, args = held_out("detector_dynamic_image")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "tflite,tflite-fp16", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    _verified(tmp_path, "saved_model.tflite", "saved_model.tflite-fp16.tflite")
    interpreter = Interpreter(model_path=str(tmp_path / "saved_model.tflite"))
    assert list(interpreter.get_input_details()[0]["shape_signature"]) == [1, -1, -1, 3]
    ops = {op["op_name"] for op in interpreter._get_ops_details()}  # noqa: SLF001
    assert "TFLite_Detection_PostProcess" in ops, ops


def test_mixed_precision_model_converts_to_every_target_in_float32(held_out, freeze, tmp_path,
                                                                   monkeypatch):
    """Keras' mixed_float16: its float16 compute reaches the converters as float32 (TFLite's
    builtins refused the float16 Conv2D, MatMul, ...), verified as float16 compute is, at
    conversion and by `freeze verify` of the artifact later (the sidecar's note)."""
    from ai_edge_litert.interpreter import Interpreter

    path, args = held_out("mixed_precision_cnn")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android,tflite,edge-int8,onnx,openvino",
                    "-o", f"{tmp_path}/", "--save-golden", f"{tmp_path}/golden")
    assert result.exit_code == 0, result.output
    names = ("model.pb", "model.tflite", "model.edge-int8.tflite", "model.onnx", "model.xml")
    _verified(tmp_path, *names)
    for name in names:
        car = json.loads((tmp_path / f"{name}.json").read_text())
        assert car["float16_compute_widened"] > 0, name
        again = freeze("verify", f"{tmp_path}/{name}", "--golden", f"{tmp_path}/golden")
        assert again.exit_code == 0, (name, again.output)
    interpreter = Interpreter(model_path=str(tmp_path / "model.tflite"))
    assert {t["dtype"] for t in interpreter.get_tensor_details()} == {np.float32, np.int32}


def test_mixed_precision_to_tflite_fp16_is_rounded_to_float16_once(held_out, freeze, tmp_path,
                                                                   monkeypatch):
    """tflite-fp16 of a mixed-precision model: float32 ends, and each float16 weight is its
    float32 variable rounded once (not a float16 graph quantized again)."""
    import keras
    from ai_edge_litert.interpreter import Interpreter

    path, args = held_out("mixed_precision_cnn")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "tflite-fp16", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    _verified(tmp_path, "model.tflite-fp16.tflite")
    interpreter = Interpreter(model_path=str(tmp_path / "model.tflite-fp16.tflite"))
    ends = interpreter.get_input_details() + interpreter.get_output_details()
    assert {t["dtype"] for t in ends} == {np.float32}
    halves = sorted(np.sort(interpreter.get_tensor(t["index"]).ravel()).tobytes()
                    for t in interpreter.get_tensor_details() if t["dtype"] == np.float16)
    model = keras.saving.load_model(path.name, compile=False)
    rounded = sorted(np.sort(np.asarray(w).astype(np.float16).ravel()).tobytes()
                     for w in model.trainable_weights)
    assert halves == rounded
