"""The base install (`pip install graphfreeze`, no extras): dist/'s wheel in its own venv (`make
test` builds `.venv-base`), run outside the checkout without PYTHONPATH: android and server
convert and verify; every format whose modules are missing is refused in one line naming the pip
extra, before the model is opened; inspect says which formats it skipped; the Ray executor
without Ray is one line too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.installs import BASE as VENV
from tests.e2e.installs import missing, run

WHY = missing(VENV / ".installed", ".venv-base")
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))
BASE = VENV / "bin" / "freeze"
WHEEL = "graphfreeze-0.1.0-py3-none-any.whl"  # a missing extra's hint names what it came from


def base(*args, cwd) -> subprocess.CompletedProcess:
    return run(BASE, *args, cwd=cwd)


def test_the_base_install_is_the_wheel_without_extras(tmp_path):
    code = ("import importlib.util as u, sys, sysconfig, graphfreeze\n"
            "print(sysconfig.get_paths()['purelib'], graphfreeze.__file__)\n"
            "print(*[m for m in sys.argv[1:] if u.find_spec(m)])")
    done = run(VENV / "bin" / "python", "-c", code, "tf2onnx", "onnxruntime", "ai_edge_litert",
               "openvino", "ray", "tensorflow_model_optimization", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (site, module), installed = (line.split() for line in done.stdout.splitlines())
    assert Path(module) == Path(site) / "graphfreeze" / "__init__.py" and Path(site).is_relative_to(VENV)
    assert installed == [], f"installed in .venv-base: {installed}"


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
        assert needs in line and "-m pip install '" in line and WHEEL in line, line  # as installed
    report = base("inspect", "model.ckpt-200", cwd=folder)
    assert report.returncode == 0, report.stderr
    assert "onnx: skipped, needs tf2onnx, onnx, onnxruntime: " in report.stdout
    assert f"{WHEEL}[convert]'" in report.stdout
    done = base("batch", "model.ckpt-200", "--outputs", "probs", "--executor", "ray",
                "--no-cache", cwd=folder)
    assert done.returncode == 6 and f"{WHEEL}[ray]'" in done.stderr
