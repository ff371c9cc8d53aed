"""Vision-transformer-style tf_keras models whose layers call TensorFlow ops directly
(TFOpLambda `compat.v1.transpose`, `compat.v1.shape`, `linalg.matmul`, models/zoo_vision.py):
they convert without --unsafe, judged by the raw ops those functions build; the same model
with a TFOpLambda calling `tf.print` or `tf.io.write_file` is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import _run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["tfop_vit_h5", "tfop_vit_keras"])
def test_tfoplambda_vision_models_convert(zoo, freeze, tmp_path, name):
    path, args = zoo(name)
    result = freeze(path, *args, "--target", "android,tflite,onnx", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    cars = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert len(cars) == 3 and all(c["verification"]["passed"] for c in cars), cars


@pytest.fixture(scope="module")
def refused_models(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vision_refused")
    _run("zoo_vision.py", "refused", out, cwd=ROOT / "models")
    return out


@pytest.mark.parametrize("file,function,what", [("print.h5", "print", "prints"),
                                                ("write.keras", "io.write_file", "writes files")])
def test_tfoplambda_host_functions_refused(refused_models, freeze, tmp_path, file, function,
                                           what):
    result = freeze(refused_models / file, "--target", "android", "-o", f"{tmp_path}/")
    assert result.exit_code == 3, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert f"(TFOpLambda tf.{function}) {what}" in lines[0] and "--unsafe" in lines[0], lines
    assert not list(tmp_path.iterdir()) and not (refused_models / "written.txt").exists()
