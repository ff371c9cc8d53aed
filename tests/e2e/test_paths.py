"""Commands typed as a user types them: in the model's own folder with bare relative paths, and
with `./`, `../`, absolute and `~` paths. The headline command runs verbatim, as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FREEZE = str(Path(sys.executable).with_name("freeze"))


def test_headline_command_verbatim_in_the_checkpoint_folder(sample):
    model_dir = sample("iris")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    done = subprocess.run([FREEZE, "--ckpt", "model.ckpt-200", "--outputs", "probs"],
                          cwd=model_dir, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "android: wrote model.ckpt-200.pb" in done.stdout
    car = json.loads((model_dir / "model.ckpt-200.pb.json").read_text())
    assert car["verification"]["passed"] and car["source"]["path"] == "model.ckpt-200"


@pytest.mark.parametrize("where,ckpt", [
    (".", "./model.ckpt-200"),
    (".", "."),  # the model_dir itself
    ("sub", "../model.ckpt-200"),
    ("..", "iris/model.ckpt-200"),
    ("/", "{abs}/model.ckpt-200"),
    ("/", "~/model.ckpt-200"),
])
def test_checkpoint_from_any_folder(sample, freeze, monkeypatch, where, ckpt):
    model_dir = sample("iris")
    (model_dir / "sub").mkdir()
    monkeypatch.chdir((model_dir / where).resolve())
    monkeypatch.setenv("HOME", str(model_dir))
    result = freeze("--ckpt", ckpt.format(abs=model_dir), "--outputs", "probs")
    assert result.exit_code == 0, result.output
    assert (model_dir / "model.ckpt-200.pb").exists()


def test_inspect_with_a_bare_prefix(sample, freeze, monkeypatch):
    model_dir = sample("iris_partitioned")  # sharded: every data shard found by the bare prefix
    monkeypatch.chdir(model_dir)
    result = freeze("inspect", "model.ckpt-200", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["files"]["prefix"] == "model.ckpt-200" and report["variables"]


@pytest.mark.parametrize("name,flag,path", [
    ("tf2_savedmodel", None, "."),
    ("tf1_savedmodel", "--saved-model", "."),
    ("model.keras", None, "model.keras"),
    ("model.h5", "--keras", "./model.h5"),
    ("frozen.pb", "--graph", "frozen.pb"),
])
def test_every_source_kind_from_its_own_folder(other, freeze, monkeypatch, name, flag, path):
    model = other(name)
    folder = model if model.is_dir() else model.parent
    monkeypatch.chdir(folder)
    outputs = ["--outputs", "probs"] if name == "frozen.pb" else []
    result = freeze(*([flag] if flag else []), path, *outputs, "-o", "out.pb")
    assert result.exit_code == 0, result.output
    assert json.loads((folder / "out.pb.json").read_text())["verification"]["passed"]
    result = freeze("inspect", path)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("path", [".", "./", "saved_model.pb"])
def test_a_savedmodel_typed_from_inside_is_written_beside_it(other, freeze, monkeypatch, path):
    """`freeze .` in a SavedModel's folder names the artifact after the folder, beside it (not
    a hidden `..pb` inside it)."""
    model = other("tf2_savedmodel")
    monkeypatch.chdir(model)
    result = freeze(path, "--force")
    assert result.exit_code == 0, result.output
    assert f"android: wrote ../{model.name}.pb" in result.output
    assert (model.parent / f"{model.name}.pb").exists()
    assert not [p.name for p in model.iterdir() if p.name.endswith(".pb.json")]
