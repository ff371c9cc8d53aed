"""The command line around the conversion: a closed stdout pipe, typos of commands and targets,
and `freeze inspect` on a wrong path (said before TensorFlow loads). Pipes and start-up run the
real `freeze` program."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FREEZE = str(Path(sys.executable).with_name("freeze"))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def run_into_closed_pipe(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """`freeze ARGS | head -0`: stdout's reader is gone before anything is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([FREEZE, *args], stdout=write, stderr=subprocess.PIPE, text=True,
                              env=ENV, cwd=cwd, timeout=300)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [("targets",), ("--help",), ("inspect", "--help"),
                                  ("--version",)])
def test_a_closed_pipe_ends_quietly(args):
    done = run_into_closed_pipe(*args)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_closed_pipe_ends_inspect_and_convert_quietly(sample, tmp_path):
    model_dir = sample("iris")
    done = run_into_closed_pipe("inspect", str(model_dir), "--json")
    assert (done.returncode, done.stderr) == (0, "")
    out = tmp_path / "out"
    done = run_into_closed_pipe(str(model_dir), "--outputs", "probs", "-o", f"{out}/",
                                "--target", "android,onnx")
    assert (done.returncode, done.stderr) == (0, "")  # every file was written before printing
    assert sorted(os.listdir(out)) == ["model.ckpt-200.onnx", "model.ckpt-200.onnx.json",
                                       "model.ckpt-200.pb", "model.ckpt-200.pb.json"]


@pytest.mark.parametrize("word,command", [("inpsect", "inspect"), ("targest", "targets"),
                                          ("bach", "batch")])
def test_a_mistyped_command_is_named(freeze, tmp_path, monkeypatch, word, command):
    monkeypatch.chdir(tmp_path)
    result = freeze(word, "m")
    assert result.exit_code == 2
    assert f"Error: unknown command '{word}'; did you mean {command}?" in result.output


def test_a_model_named_like_a_command_is_still_a_model(freeze, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inspekt").write_bytes(b"not a model")
    result = freeze("inspekt", "--outputs", "probs")
    assert result.exit_code == 3 and "error: inspekt: " in result.output


@pytest.mark.parametrize("typo,meant", [("andriod", "android"), ("tflite-f16", "tflite-fp16"),
                                        ("onxx", "onnx")])
def test_a_mistyped_target_is_named(sample, freeze, typo, meant):
    result = freeze(sample("iris"), "--outputs", "probs", "--target", typo)
    assert result.exit_code == 6
    assert result.stderr.startswith(f"error: unknown target '{typo}'; did you mean {meant}? "
                                    "(targets: android, ")


def test_inspect_checks_the_path_before_loading_tensorflow(tmp_path):
    code = ("import atexit, sys; atexit.register(lambda: print('tensorflow' in sys.modules, "
            "file=sys.stderr)); sys.argv = ['freeze', 'inspect', sys.argv[1]]; "
            "from graphfreeze_cli.main import main; main()")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "nope")], env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert done.stderr.startswith(f"error: {tmp_path / 'nope'}: no such file or directory")
    assert done.stderr.endswith("\nFalse\n")  # TensorFlow was never imported


def test_debug_shows_the_traceback_and_keeps_the_exit_code(samples, freeze, tmp_path):
    result = freeze("--ckpt", samples / "iris" / "model.ckpt-200", "--outputs", "prob",
                    "-o", tmp_path / "m.pb", "--debug")
    assert result.exit_code == 3, result.output  # not 1: the error is still the user's
    assert "Traceback" in result.output and "did you mean 'probs'" in result.output
