"""What `freeze` prints into a pipe or a CI log (not a terminal): lines as wide as they need (or
COLUMNS), never cut at 80 mid-word, no trailing spaces; the terms it uses explained under it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FREEZE = str(Path(sys.executable).with_name("freeze"))


def piped(*args: str, cwd=None, **env: str) -> subprocess.CompletedProcess:
    """`freeze ARGS | cat`: stdout is a pipe."""
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([FREEZE, *args], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env})


def test_targets_into_a_pipe_are_whole_words_without_trailing_spaces():
    done = piped("targets")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line != line.rstrip()]
    assert "optimize_for_inference" in done.stdout and "…" not in done.stdout
    assert max(map(len, lines)) > 80
    narrow = piped("targets", COLUMNS="100").stdout.splitlines()
    assert max(map(len, narrow)) <= 100 and not [x for x in narrow if x != x.rstrip()]


def test_help_into_a_pipe_has_no_trailing_spaces():
    done = piped("--help")
    assert done.returncode == 0 and not [x for x in done.stdout.splitlines() if x != x.rstrip()]


def test_a_run_into_a_pipe_names_its_files_whole_and_explains_its_terms(sample):
    folder = sample("iris")
    done = piped("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "tflite,edge-int8",
                 "-o", "out/", cwd=folder)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line != line.rstrip()]
    table = [line for line in lines if line.startswith("│ edge-int8")]
    assert len(table) == 1 and "model.ckpt-200.edge-int8.tflite" in table[0]
    assert any(line.startswith("  gpu: ") for line in lines)
    assert any(line.startswith("gpu: N/M ops: ") and "CPU" in line for line in lines)
    assert any("rmse/scale" in line and "rounding alone" in line for line in lines[:-2] if
               line.startswith("  worst quantized layers"))
    assert any(line.startswith("rmse/scale: ") and "int8 steps" in line for line in lines)


def test_names_from_an_artifact_are_printed_verbatim_not_as_markup(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    names = ["x[/]", "[link=http://127.0.0.1/]y[/link]", "[bold]z"]
    graph = helper.make_graph(
        [helper.make_node("Identity", [names[0]], [names[1]]),
         helper.make_node("Identity", [names[1]], [names[2]])], "g",
        [helper.make_tensor_value_info(names[0], TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in names[1:]])
    onnx.save(helper.make_model(graph), tmp_path / "[red]m.onnx")
    done = piped("inspect", "[red]m.onnx", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[red]m.onnx: onnx artifact")
    rows = [line.split("│")[2].strip() for line in done.stdout.splitlines()
            if line.startswith(("│ input", "│ output"))]
    assert rows == names
