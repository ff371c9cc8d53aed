"""Shared fixtures: real sample checkpoints built once per session by models/build_samples.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> Path:
    """Directory with one model_dir per sample (iris, iris_resource, ..., cnn_v2)."""
    out = tmp_path_factory.mktemp("samples")
    subprocess.run([sys.executable, str(ROOT / "models" / "build_samples.py"), str(out)],
                   check=True, capture_output=True)
    return out


@pytest.fixture
def sample(samples, tmp_path):
    """A fresh copy of one sample model_dir (tests may write or break files in it)."""

    def copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(samples / name, dest)
        return dest

    return copy


@pytest.fixture
def freeze():
    """Run the `freeze` CLI in-process; returns click's Result (exit_code, output, stderr)."""
    from graphfreeze_cli.main import main

    def run(*args: str):
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)

    return run
