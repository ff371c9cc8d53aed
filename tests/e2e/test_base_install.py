"""The base install (`pip install graphfreeze`, no extras), in its own venv (`make test` builds
`.venv-base`): android and server convert and verify; every format whose modules are missing is
refused in one line naming the pip extra, before the model is opened; inspect says which formats
it skipped; the Ray executor without Ray is one line too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / ".venv-base" / "bin" / "freeze"

pytestmark = pytest.mark.skipif(not BASE.exists(), reason="no .venv-base (make test builds it: "
                                                          "make .venv-base)")


def base(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([str(BASE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_the_base_install_has_no_extras():
    python = BASE.with_name("python")
    for module in ("tf2onnx", "onnxruntime", "ai_edge_litert", "openvino", "ray",
                   "tensorflow_model_optimization"):
        done = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True)
        assert done.returncode != 0, f"{module} is installed in .venv-base"


def test_android_and_server_convert_the_rest_are_refused(samples, tmp_path):
    shutil.copytree(samples / "iris", tmp_path / "iris")
    folder = tmp_path / "iris"
    done = base("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "android,server",
                cwd=folder)
    assert done.returncode == 0, done.stderr
    assert (folder / "model.ckpt-200.pb").exists() and (folder / "model.ckpt-200.savedmodel").is_dir()
    for target, needs in (("onnx", "tf2onnx, onnx, onnxruntime"), ("tflite", "ai_edge_litert"),
                          ("edge-int8", "ai_edge_litert"), ("openvino", "openvino")):
        done = base("--ckpt", "missing.ckpt", "--outputs", "probs", "--target", target,
                    cwd=folder)  # the model is not even looked at
        assert done.returncode == 6, (target, done.stderr)
        (line,) = done.stderr.strip().splitlines()
        assert needs in line and "pip install 'graphfreeze[" in line, line
    report = base("inspect", "model.ckpt-200", cwd=folder)
    assert report.returncode == 0, report.stderr
    assert "onnx: skipped, needs tf2onnx, onnx, onnxruntime: pip install 'graphfreeze[convert]'" \
        in report.stdout
    done = base("batch", "model.ckpt-200", "--outputs", "probs", "--executor", "ray",
                "--no-cache", cwd=folder)
    assert done.returncode == 6 and "pip install 'graphfreeze[ray]'" in done.stderr
