"""Loops and branches that read variables inside their bodies (models/loops.py) through the
real CLI, run in the model's folder with relative paths: each target the model lists converts
and verifies; a model that writes a variable it reads is refused as our limitation, not as a
corrupt file."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="session")
def loops(tmp_path_factory):
    """loops(name) -> (SavedModel path, args): one models/loops.py model, built on first use."""
    from tests.conftest import _shared, _zoo_builder

    return _zoo_builder(_shared(tmp_path_factory, "loops"), "loops.py")


def _verified(loops, freeze, monkeypatch, tmp_path, name: str, targets: list[str]) -> dict:
    """NAME frozen to TARGETS from its own folder; {target: sidecar}, each verified."""
    path, args = loops(name)
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", ",".join(targets), "-o", f"{tmp_path}/out/")
    assert result.exit_code == 0, result.output
    cars = {}
    for car in (tmp_path / "out").glob("*.json"):
        data = json.loads(car.read_text())
        assert data["verification"]["passed"], data["verification"]
        cars[data["target"]] = data
    assert sorted(cars) == sorted(targets)
    return cars


def test_a_greedy_decoder_reading_its_embedding_in_the_loop(loops, freeze, monkeypatch,
                                                            tmp_path):
    cars = _verified(loops, freeze, monkeypatch, tmp_path, "greedy_decoder",
                     ["android", "server", "tflite", "onnx", "openvino"])
    assert {o["name"] for o in cars["android"]["outputs"]} == {"tokens:0", "logits:0",
                                                              "hidden:0"}


@pytest.mark.parametrize("name", ["branchy_loop", "case_loop", "training_batch_norm"])
def test_branches_and_assigns_in_bodies(loops, freeze, monkeypatch, tmp_path, name):
    path, _ = loops(name)
    targets = json.loads((path.parent / "zoo.json").read_text())["targets"]
    _verified(loops, freeze, monkeypatch, tmp_path, name, targets)


def test_a_model_we_cannot_freeze_is_not_called_corrupt(loops, freeze, monkeypatch, tmp_path):
    """A scatter into a variable read back in the same call: refused in one line that names
    the file and says it is graphfreeze's limitation."""
    path, _ = loops("scatter_cache")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, "--target", "android", "-o", f"{tmp_path}/out/")
    assert result.exit_code not in (0, 1), result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: saved_model/saved_model.pb: graphfreeze cannot freeze"), line
    assert "ResourceScatterNdUpdate" in line and "corrupt" not in line and \
        "re-export" not in line, line


def test_a_variable_assigned_then_read_is_refused_not_frozen_wrong(loops, freeze, monkeypatch,
                                                                  tmp_path):
    """Dropping the assign would freeze the saved state in place of 3x + 1 (and verify, the
    reference being the same frozen function): refused in one line naming the assign and the
    variable, nothing written."""
    path, _ = loops("assign_then_read")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, "--target", "android", "-o", f"{tmp_path}/out/")
    assert result.exit_code == 3, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0] == (
        "error: saved_model/saved_model.pb: graphfreeze cannot freeze "
        "'StatefulPartitionedCall/AssignVariableOp': it assigns variable 'state' and then reads "
        "it; freezing would drop the assign (a limitation of graphfreeze, not of the file: "
        "export a function that does not read it back)"), lines[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
