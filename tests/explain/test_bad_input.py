"""freeze explain on what it cannot open: one line naming the file (or port) and the fix, exit
3; without Model Explorer installed, one line naming the extra, exit 6. Model Explorer's
adapters read a model's graph only: a SavedModel whose function writes a file is read without
running anything (and without TensorFlow)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

from graphfreeze.errors import install_hint

from .conftest import ENV, FREEZE


def _one_line(result) -> str:
    lines = [line for line in (result.stderr or result.output).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_port_in_use_is_named_with_the_flag(explained, freeze, monkeypatch):
    monkeypatch.chdir(explained)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = freeze("explain", "out/model.ckpt-200.pb", "--port", port)
    assert result.exit_code == 3
    line = _one_line(result)
    assert f"port {port} on 127.0.0.1 is in use" in line and "--port" in line


def test_an_artifact_without_overlay_says_to_convert_with_explain(explained, freeze, tmp_path,
                                                                  monkeypatch):
    for name in ("model.ckpt-200.pb", "model.ckpt-200.pb.json"):
        shutil.copy(explained / "out" / name, tmp_path / name)
    car = json.loads((tmp_path / "model.ckpt-200.pb.json").read_text())
    del car["explain"]  # as a run without --explain writes it
    (tmp_path / "model.ckpt-200.pb.json").write_text(json.dumps(car))
    monkeypatch.chdir(tmp_path)
    result = freeze("explain", "model.ckpt-200.pb")
    assert result.exit_code == 3
    line = _one_line(result)
    assert "model.ckpt-200.pb: it has no explain overlay" in line and "--explain" in line
    car["explain"] = {"divergence": "model.ckpt-200.pb.divergence.json"}  # named, not there
    (tmp_path / "model.ckpt-200.pb.json").write_text(json.dumps(car))
    line = _one_line(freeze("explain", "model.ckpt-200.pb"))
    assert "its overlay model.ckpt-200.pb.divergence.json is missing" in line


def test_a_file_model_explorer_does_not_read(explained, freeze, monkeypatch):
    monkeypatch.chdir(explained)
    result = freeze("explain", "model.ckpt-200.meta")
    assert result.exit_code == 3
    line = _one_line(result)
    assert "model.ckpt-200.meta: not a file Model Explorer reads" in line
    assert all(what in line for what in (".tflite files", "frozen GraphDefs (.pb)",
                                         "SavedModel folders")), line


def test_without_the_extra_one_line_names_it(explained, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "model_explorer.py").write_text("raise ImportError('not installed')\n")
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(blocked), *filter(None, [
        ENV.get("PYTHONPATH")])])}
    done = subprocess.run([FREEZE, "explain", "out/model.ckpt-200.tflite-fp16.tflite"], cwd=explained,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 6, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: freeze explain needs Model Explorer (ai-edge-model-explorer), not installed; "
        f"{install_hint('explorer')}"]


def test_a_savedmodel_is_read_not_run(hostile_models):
    """sm_write's serving function writes TARGET/sm_write.txt when run; Model Explorer's
    adapter only parses its saved_model.pb."""
    model, target = hostile_models / "models" / "sm_write", hostile_models / "target"
    code = ("import json, sys; from graphfreeze.explain.serve import read_graph; "
            f"g = read_graph({str(model)!r}, 'builtin_tf_direct'); "
            "print(json.dumps([len(g['nodes']), 'tensorflow' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    nodes, tensorflow = json.loads(done.stdout.splitlines()[-1])
    assert nodes > 0 and not tensorflow
    assert not (target / "sm_write.txt").exists()


def test_changed_bytes_are_refused(explained, freeze, tmp_path, monkeypatch):
    out = explained / "out"
    car = json.loads((out / "model.ckpt-200.pb.json").read_text())
    for name in ("model.ckpt-200.pb", "model.ckpt-200.pb.json", car["explain"]["divergence"]):
        shutil.copy(out / name, tmp_path / name)
    with open(tmp_path / "model.ckpt-200.pb", "ab") as f:
        f.write(b"\0")
    monkeypatch.chdir(tmp_path)
    result = freeze("explain", "model.ckpt-200.pb")
    assert result.exit_code == 3
    assert "are not those its sidecar records" in _one_line(result)


def test_explain_of_a_format_model_explorer_cannot_draw_says_so(samples, freeze, tmp_path,
                                                               monkeypatch):
    """Its format has no Model Explorer adapter (no explorer.py): the artifact is written, where
    it diverges located into its sidecar, and one line says no overlay was drawn."""
    shutil.copytree(samples / "iris", tmp_path / "iris")
    monkeypatch.chdir(tmp_path / "iris")
    result = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "onnx",
                    "--explain")
    assert result.exit_code == 0, result.output + result.stderr
    assert "no overlays: Model Explorer has no adapter for onnx artifacts" in result.output
    car = json.loads((tmp_path / "iris" / "model.ckpt-200.onnx.json").read_text())
    assert car["verification"]["divergence"]["compared"] >= 1, car["verification"]
    assert not list((tmp_path / "iris").glob("*.divergence.json"))
