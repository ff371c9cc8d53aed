"""The fast subset of the zoo (issue 14): one model per cause the issue names, built by
models/zoo.py and converted through the real CLI; each artifact exists and verified."""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_bad_input import assert_failed

EXTENSION = {"android": "pb", "tflite": "tflite", "onnx": "onnx"}


def converted(zoo, freeze, tmp_path, name: str, targets: str):
    """Convert zoo model NAME (with its zoo.json args) to TARGETS into tmp_path/out/; each
    target's artifact exists and its sidecar says verification passed."""
    path, args = zoo(name)
    out = tmp_path / "out"
    result = freeze(path, *args, "--target", targets, "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    for target in targets.split(","):
        artifacts = list(out.glob(f"*.{EXTENSION[target]}"))
        assert len(artifacts) == 1, (target, sorted(p.name for p in out.iterdir()))
        car = json.loads(artifacts[0].with_name(artifacts[0].name + ".json").read_text())
        assert car["verification"]["passed"], (target, car["verification"])
    return out


@pytest.mark.parametrize("name,targets", [
    ("mobilenet_v3_small", "tflite"),  # XNNPack could not reshape to verification's batch of 2
    ("lstm_addition", "android"),  # Keras 3 RNNs: TensorList handles were constant-folded
    ("transformer_encoder", "onnx"),  # exact GELU: Erfc had no ONNX mapping
    ("tfkeras_cnn_keras", "android"),  # a .keras written by tf_keras
    ("v1_checkpoint", "android"),  # SaverDef.V1: no .index
    ("no_placeholder", "android,tflite,onnx"),  # freeze_graph's testFreezeGraphV2
])
def test_zoo_model_converts(zoo, freeze, tmp_path, name, targets):
    converted(zoo, freeze, tmp_path, name, targets)


def test_unknown_rank_input_is_refused_with_the_fix(zoo, freeze, tmp_path):
    path, args = zoo("unknown_rank_savedmodel")
    assert args == ["--inputs", "x[1,4]"]
    out = tmp_path / "refused"
    result = freeze(path, "--target", "android", "-o", f"{out}/")
    assert_failed(result, 3, "unknown rank", "--inputs", "x[")
    assert not out.exists() or not any(out.iterdir())


def test_unknown_rank_input_converts_with_a_shape(zoo, freeze, tmp_path):
    out = converted(zoo, freeze, tmp_path, "unknown_rank_savedmodel", "android,tflite,onnx")
    car = json.loads(next(out.glob("*.pb.json")).read_text())
    assert car["inputs"][0]["shape"] == [1, 4], car["inputs"]
