"""Zoo models (models/zoo.py) whose loading and freezing the sources and graph passes decide:
TF1 graph-mode classics, Keras 3 recurrent models, a Keras 3 `model.export` EfficientNet, a
tf_keras-written `.keras`, a tfmot CQAT `.h5`. Each converts and verifies, or is refused in one
line naming the ops and what to do where TFLite itself has no builtin for them."""

from __future__ import annotations

import json

import pytest


def _convert(freeze, zoo, tmp_path, name: str, targets: str):
    path, args = zoo(name)
    return freeze(path, *args, "--target", targets, "-o", f"{tmp_path}/")


def _all_verified(tmp_path, count: int) -> None:
    cars = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert len(cars) == count, [p.name for p in tmp_path.rglob("*")]
    assert all(c["verification"]["passed"] for c in cars), cars


@pytest.mark.parametrize("name", ["slim_inception", "while_loop", "partitioned_vars",
                                  "v1_checkpoint"])
def test_tf1_classics_convert_everywhere(zoo, freeze, tmp_path, name):
    result = _convert(freeze, zoo, tmp_path, name, "android,tflite,onnx")
    assert result.exit_code == 0, result.output
    _all_verified(tmp_path, 3)


def test_dynamic_rnn_converts_and_tflite_names_its_tensor_arrays(zoo, freeze, tmp_path):
    result = _convert(freeze, zoo, tmp_path / "ok", "dynamic_rnn", "android,onnx")
    assert result.exit_code == 0, result.output
    _all_verified(tmp_path / "ok", 2)
    # TFLite has no builtin for v1 TensorArrays (TFLiteConverter on freeze_graph's output fails
    # the same way): one line naming them and the way out
    result = _convert(freeze, zoo, tmp_path / "lite", "dynamic_rnn", "tflite")
    assert result.exit_code == 3, result.output
    line = result.output.strip().splitlines()[-1]
    assert "TensorArrayV3" in line and "--allow-tf-ops" in line, line


@pytest.mark.parametrize("name", ["lstm_addition", "bilstm_imdb", "gru_masked"])
def test_keras3_recurrent_models_convert(zoo, freeze, tmp_path, name):
    result = _convert(freeze, zoo, tmp_path, name, "android,onnx")
    assert result.exit_code == 0, result.output
    _all_verified(tmp_path, 2)


@pytest.mark.parametrize("name", ["efficientnet_b0_export", "tfkeras_cnn_keras", "cqat_cnn"])
def test_saved_and_tf_keras_models_convert(zoo, freeze, tmp_path, name):
    result = _convert(freeze, zoo, tmp_path, name, "android")
    assert result.exit_code == 0, result.output
    _all_verified(tmp_path, 1)
