"""One real conversion with --explain, shared by the explain tests: the iris sample to a frozen
graph, a SavedModel and fp16 TFLite, with a tolerance its output meets and its logits do not
(so the divergence overlay has a diverging node; fp16 TFLite also gets the int8 sensitivity
overlay)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _once, _shared

FREEZE = str(Path(sys.executable).with_name("freeze"))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


@pytest.fixture(scope="session")
def explained(samples, tmp_path_factory) -> Path:
    """The model's folder; its artifacts and overlays in out/. Converted once per test run, by
    the first pytest-xdist worker that needs it (the others wait, then reuse it)."""

    def build(root: Path) -> None:
        folder = root / "iris"
        shutil.copytree(samples / "iris", folder)
        done = subprocess.run([FREEZE, "--ckpt", "model.ckpt-200", "--outputs", "probs",
                               "--target", "android,server,tflite-fp16", "--tolerance", "5e-4",
                               "--explain", "-o", "out/"], cwd=folder, env=ENV,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "freeze explain out/model.ckpt-200.tflite-fp16.tflite" in done.stdout

    return _once(_shared(tmp_path_factory, "explained"), build) / "iris"
