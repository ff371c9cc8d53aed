"""`freeze --ckpt ...` typed in the model's folder as a newcomer types it: the files it writes and
what it says first when something is wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FREEZE = str(Path(sys.executable).with_name("freeze"))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def freeze(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FREEZE, *args], cwd=folder, capture_output=True, text=True, env=ENV,
                          timeout=600)


def test_a_quantized_target_file_carries_its_name_alone_or_not(sample):
    folder = sample("iris")
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target",
                  "edge-int8", "--no-verify", "-o", "alone/")
    assert done.returncode == 0, done.stderr
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target",
                  "tflite,edge-int8", "--no-verify", "-o", "both/")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(folder / "alone")) == ["model.ckpt-200.edge-int8.tflite",
                                                   "model.ckpt-200.edge-int8.tflite.json"]
    assert sorted(os.listdir(folder / "both")) == [
        "model.ckpt-200.edge-int8.tflite", "model.ckpt-200.edge-int8.tflite.json",
        "model.ckpt-200.tflite", "model.ckpt-200.tflite.json"]


def test_a_mistyped_output_is_said_before_the_existing_file(sample):
    """A user fixing a typo is not told to --force first."""
    folder = sample("iris")
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--no-verify")
    assert done.returncode == 0, done.stderr
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "prbs", "--no-verify")
    assert done.returncode == 3 and "output 'prbs' not in graph" in done.stderr, done.stderr
    assert "--force" not in done.stderr
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--no-verify")
    assert done.returncode == 4 and "already exists; pass --force" in done.stderr, done.stderr
