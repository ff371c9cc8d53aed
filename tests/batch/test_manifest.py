"""Manifest keys come from the options declared once: any stage option (explain included) in
[defaults] or per [[model]], per target under target_options, path options relative to the
manifest; a key nothing declares is one line with did-you-mean."""

from __future__ import annotations

import json

import numpy as np
import pytest
from graphfreeze.batch.manifest import parse_manifest
from graphfreeze.errors import ConfigError
from graphfreeze.registry import Registry


def write(folder, text: str):
    path = folder / "models.toml"
    path.write_text("schema_version = 1\n" + text)
    return str(path)


def test_stage_source_and_target_options_are_manifest_keys(samples, tmp_path):
    ckpt = samples / "iris" / "model.ckpt-200"
    np.savez(tmp_path / "calib.npz", x=np.ones((4, 4), np.float32))
    manifest = write(tmp_path, f"""
[defaults]
explain = true
tolerance = 1e-3
[defaults.target_options.edge-int8]
calibration = "calib.npz"
[[model]]
source = "{ckpt}"
outputs = "probs"
targets = ["android", "edge-int8"]
step = 200
[model.target_options.edge-int8]
calibration_samples = 7
""")
    (spec,) = parse_manifest(manifest, Registry.default(plugins=False))
    o = spec.options
    assert o.stage_options == {"explain": True, "tolerance": 1e-3}
    assert o.source_options == {"step": 200}
    assert o.target_options == {"edge-int8": {"calibration": str(tmp_path / "calib.npz"),
                                              "calibration_samples": 7}}


def test_explain_and_a_per_target_option_reach_the_artifacts(samples, tmp_path, monkeypatch):
    from graphfreeze.batch import run

    ckpt = samples / "iris" / "model.ckpt-200"
    write(tmp_path, f"""
[[model]]
name = "iris"
source = "{ckpt}"
outputs = "probs"
targets = ["android", "tflite"]
explain = true
[model.target_options.tflite]
tolerance = 0.5
""")
    monkeypatch.chdir(tmp_path)
    report = run("models.toml", cache=None, jobs=1)
    assert report.jobs[0].status == "ok", report.jobs[0].error
    cars = {a.target: a.sidecar for a in report.jobs[0].artifacts}
    assert cars["android"]["verification"]["tolerance"] == 1e-5  # the target's own
    assert cars["tflite"]["verification"]["tolerance"] == 0.5  # only where it was set
    assert all("divergence" in car["verification"] for car in cars.values())  # explain
    assert json.loads((tmp_path / "dist" / "iris" / "model.ckpt-200.pb.json").read_text())[
        "verification"]["divergence"]
    assert (tmp_path / "dist" / "iris" / "model.ckpt-200.tflite.divergence.json").exists()


@pytest.mark.parametrize("text, message", [
    ("[[model]]\nsource = 'SRC'\ntolerence = 1\n",
     r"models.toml:4: unknown key 'tolerence' in \[\[model\]\]; did you mean tolerance\?"),
    ("[[model]]\nsource = 'SRC'\ntargets = 'tflite'\n[model.target_options.tflite]\nopset = 12\n",
     r"option opset applies to no stage of target 'tflite'"),
    ("[[model]]\nsource = 'SRC'\n[model.target_options.tfilte]\ntolerance = 1\n",
     r"unknown target 'tfilte'; did you mean tflite\?"),
    ("[[model]]\nsource = 'SRC'\ntargets = []\n",
     r"models.toml:\d+: targets names no target; name one or more"),
    ("[defaults]\ntargets = ' , '\n[[model]]\nsource = 'SRC'\n",
     r"models.toml:\d+: targets names no target"),
    ("[[model]]\nsource = 'SRC'\nname = 'Report.json'\n",
     r"models.toml:\d+: job name 'Report.json' is a report's file name in out_dir; give the "
     r"\[\[model\]\] another name"),
])
def test_a_wrong_key_is_one_line(samples, tmp_path, text, message):
    from graphfreeze.batch.jobs import prepare_jobs

    registry = Registry.default(plugins=False)
    manifest = write(tmp_path, text.replace("SRC", str(samples / "iris" / "model.ckpt-200")))
    with pytest.raises(ConfigError, match=message):
        prepare_jobs(parse_manifest(manifest, registry), registry)


def test_a_checkpoint_prefix_no_file_has_is_a_source(samples, source_cases, tmp_path):
    """A V2 prefix (its .index) and a sharded V1 prefix (model.ckpt-7-00000-of-00001 and
    .meta: neither file is the prefix) are sources, named relative to the manifest, as `freeze`
    takes them, and so is a glob of prefixes (one per folder that has one); a prefix of no
    checkpoint is one line."""
    import shutil

    shutil.copytree(samples / "iris", tmp_path / "v2")
    shutil.copytree(samples / "iris_resource", tmp_path / "runs" / "a")
    shutil.copytree(samples / "iris", tmp_path / "runs" / "b")
    (tmp_path / "runs" / "c").mkdir()  # a folder without that checkpoint: not a job
    shutil.copytree(source_cases / "v1_sharded", tmp_path / "v1")
    registry = Registry.default(plugins=False)
    manifest = write(tmp_path, "[[model]]\nsource = 'v2/model.ckpt-200'\n"
                               "[[model]]\nsource = 'v1/model.ckpt-7'\n"
                               "[[model]]\nsource = 'runs/*/model.ckpt-200'\n")
    assert [(spec.name, spec.source) for spec in parse_manifest(manifest, registry)] == [
        (name, str(tmp_path / path)) for name, path in [
            ("v2-model.ckpt-200", "v2/model.ckpt-200"), ("model.ckpt-7", "v1/model.ckpt-7"),
            ("a-model.ckpt-200", "runs/a/model.ckpt-200"),
            ("b-model.ckpt-200", "runs/b/model.ckpt-200")]]
    manifest = write(tmp_path, "[[model]]\nsource = 'v1/model.ckpt-8'\n")
    with pytest.raises(ConfigError, match=r"models.toml:3: source .*/v1/model.ckpt-8 does not "
                                          r"exist; fix the path \(relative to the manifest's"):
        parse_manifest(manifest, registry)
