"""io/outputs.output_paths and convert.prepare: where artifacts go, and everything refused before a
model is opened (no TensorFlow imported to do it)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from graphfreeze import plan
from graphfreeze.convert import Request, prepare
from graphfreeze.errors import OutputError
from graphfreeze.io.outputs import output_paths
from graphfreeze.registry import Registry


@pytest.fixture(scope="module")
def registry():
    return Registry.default(plugins=False)


def paths(registry, targets, stem="m/model", output=None):
    return output_paths(output, plan.build(registry, list(targets)), stem)


def test_one_target_with_o_is_that_file(registry):
    assert paths(registry, ["server"], output="out/anything.bin") == {"server": "out/anything.bin"}


def test_o_dir_puts_each_artifact_in_it_under_the_stem_name(registry):
    got = paths(registry, ["android", "server"], stem="/data/run/model.ckpt-200", output="out/")
    assert got == {"android": "out/model.ckpt-200.pb", "server": "out/model.ckpt-200.savedmodel"}
    assert paths(registry, ["android"], output="out/") == {"android": "out/model.pb"}
    nested = paths(registry, ["onnx"], output="a/b/c/")
    assert nested == {"onnx": "a/b/c/model.onnx"}


def test_targets_sharing_a_suffix_get_the_target_name(registry):
    got = paths(registry, ["tflite", "tflite-fp16", "edge-int8", "android"])
    assert got == {"tflite": "m/model.tflite", "tflite-fp16": "m/model.tflite-fp16.tflite",
                   "edge-int8": "m/model.edge-int8.tflite", "android": "m/model.pb"}
    got = paths(registry, ["tflite-fp16", "tflite-dynamic"], output="o/")
    assert got == {"tflite-fp16": "o/model.tflite-fp16.tflite",
                   "tflite-dynamic": "o/model.tflite-dynamic.tflite"}
    assert len(set(got.values())) == len(got)


def test_a_quantized_target_file_carries_its_name_whatever_else_runs(registry):
    """A build script can rely on the name; an int8 model never gets a float-looking one."""
    for others in ([], ["tflite"], ["android", "onnx"]):
        got = paths(registry, ["edge-int8", "onnx-int8", *others], output="o/")
        assert got["edge-int8"] == "o/model.edge-int8.tflite"
        assert got["onnx-int8"] == "o/model.onnx-int8.onnx"
    assert paths(registry, ["tflite"], output="o/") == {"tflite": "o/model.tflite"}


def test_several_targets_with_o_file_is_treated_as_a_folder(registry):
    got = paths(registry, ["android", "onnx"], output="out")
    assert got == {"android": "out/model.pb", "onnx": "out/model.onnx"}


@pytest.fixture(scope="module")
def kinds(samples, other_samples):
    iris = samples / "iris"
    return {"model_dir": (iris, str(iris / "model.ckpt-200")),
            "prefix": (iris / "model.ckpt-200", str(iris / "model.ckpt-200")),
            "saved_model": (other_samples / "tf2_savedmodel", str(other_samples / "tf2_savedmodel")),
            "saved_model.pb": (other_samples / "tf1_savedmodel" / "saved_model.pb",
                               str(other_samples / "tf1_savedmodel")),
            "keras": (other_samples / "model.keras", str(other_samples / "model")),
            "h5": (other_samples / "model.h5", str(other_samples / "model")),
            "frozen": (other_samples / "frozen.pb", str(other_samples / "frozen.optimized"))}


@pytest.mark.parametrize("kind", ["model_dir", "prefix", "saved_model", "saved_model.pb",
                                  "keras", "h5", "frozen"])
def test_default_paths_are_beside_the_source_for_each_kind(kinds, registry, kind):
    source, stem = kinds[kind]
    prepared = prepare(Request(source=str(source), targets=("android", "server", "tflite")),
                       registry)
    assert prepared.paths == {"android": stem + ".pb", "server": stem + ".savedmodel",
                              "tflite": stem + ".tflite"}
    assert prepared.sidecars == {t: p + ".json" for t, p in prepared.paths.items()}
    assert [p.target.name for p in prepared.plans] == ["android", "server", "tflite"]


def test_prepare_refuses_an_existing_output_unless_forced(sample, registry):
    model_dir = sample("iris")
    existing = model_dir / "model.ckpt-200.pb"
    existing.write_bytes(b"old")
    with pytest.raises(OutputError, match=r"model.ckpt-200.pb: already exists; pass --force"):
        prepare(Request(source=str(model_dir)), registry)
    prepared = prepare(Request(source=str(model_dir), force=True), registry)
    assert prepared.paths == {"android": str(existing)}
    assert existing.read_bytes() == b"old", "prepare writes nothing"
    (model_dir / "m.onnx.json").write_text("{}")  # a sidecar in the way counts too
    with pytest.raises(OutputError, match=r"m.onnx.json: already exists"):
        prepare(Request(source=str(model_dir), targets=("onnx",),
                        output=str(model_dir / "m.onnx")), registry)


def test_an_existing_folder_as_o_suggests_writing_into_it(sample, tmp_path, registry):
    (tmp_path / "models").mkdir()
    request = Request(source=str(sample("iris")), output=str(tmp_path / "models"))
    for force in (False, True):  # a file cannot replace a folder, even with --force
        with pytest.raises(OutputError, match=r"models: already exists \(a folder\); give -o "
                                              r".*models/ to write into it, or remove the folder$"):
            prepare(dataclasses.replace(request, force=force), registry)
    written = prepare(Request(source=request.source, output=request.output + "/"), registry)
    assert written.paths == {"android": str(tmp_path / "models" / "model.ckpt-200.pb")}
    server = dataclasses.replace(request, targets=("server",))  # a folder artifact: --force
    with pytest.raises(OutputError, match=r"to write into it \(--force replaces it\)$"):
        prepare(server, registry)
    assert prepare(dataclasses.replace(server, force=True), registry).paths == \
        {"server": str(tmp_path / "models")}


def test_several_targets_into_one_file_name_is_refused(registry, tmp_path):
    for name in ("a/out.pb", "a/out.ONNX"):
        with pytest.raises(OutputError, match=r": -o names one artifact, and 2 targets write "
                                              r"one each; give a folder \(-o DIR/\) or one target"):
            paths(registry, ["android", "onnx"], output=name)
    assert paths(registry, ["android", "onnx"], output="a/out") == \
        {"android": "a/out/model.pb", "onnx": "a/out/model.onnx"}
    (tmp_path / "exports.onnx").mkdir()  # an existing folder of that name is written into
    assert paths(registry, ["android", "onnx"], output=str(tmp_path / "exports.onnx"))["onnx"] \
        == str(tmp_path / "exports.onnx" / "model.onnx")


def test_prepare_refuses_the_input_as_output(other, registry):
    frozen = other("frozen.pb")
    for force in (False, True):
        with pytest.raises(OutputError, match=r"frozen.pb: is a file of the input model; "
                                              r"choose another output"):
            prepare(Request(source=str(frozen), output=str(frozen), force=force), registry)
    saved = other("tf2_savedmodel")
    with pytest.raises(OutputError, match="of the input model"):
        prepare(Request(source=f"{saved}/", targets=("server",), output=str(saved), force=True),
                registry)


def test_the_folders_state_file_is_kept_when_the_prefix_is_given(sample, tmp_path):
    """`freeze --ckpt model.ckpt-200 -o checkpoint --force` in the model's folder would replace
    the `checkpoint` state file training and `tf.train.latest_checkpoint` read: refused (exit
    4), the file untouched."""
    folder = sample("iris")
    state = (folder / "checkpoint").read_bytes()
    done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "--ckpt",
                           "model.ckpt-200", "--outputs", "probs", "--no-verify", "-o",
                           "checkpoint", "--force"], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip() == \
        "error: checkpoint: is a file of the input model; choose another -o"
    assert (folder / "checkpoint").read_bytes() == state


def test_a_folder_holding_the_model_is_refused_as_output(sample, tmp_path):
    """`freeze --target server -o FOLDER --force` with the model inside FOLDER: the SavedModel
    would replace the folder and the model with it. Refused (exit 4) from the model's folder,
    its parent and as an absolute path; the checkpoint is untouched."""
    folder = sample("iris")
    before = sorted(p.name for p in folder.iterdir())
    for cwd, ckpt, out in [(folder.parent, "iris/model.ckpt-200", "iris"),
                           (folder, "model.ckpt-200", "."), (folder, "model.ckpt-200", ".."),
                           (folder, "model.ckpt-200", str(folder))]:
        done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "--ckpt", ckpt,
                               "--outputs", "probs", "--target", "server", "--no-verify",
                               "-o", out, "--force"], cwd=cwd, capture_output=True, text=True)
        assert done.returncode == 4, done.stderr
        assert done.stderr.strip().endswith("holds the input model ("
                                            f"{folder / 'model.ckpt-200'}); choose another -o")
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("source,output", [
    ("./frozen.pb", "frozen.pb"),  # the same file, spelt two ways
    ("frozen.pb", "{other}/frozen.pb"),
    ("{iris}", "{iris}/model.ckpt-200.meta"),  # a file the checkpoint source reads
    ("tf2_savedmodel", "tf2_savedmodel/saved_model.pb"),
])
def test_prepare_refuses_every_input_file_as_output(samples, other_samples, registry,
                                                    monkeypatch, source, output):
    monkeypatch.chdir(other_samples)
    where = {"other": other_samples, "iris": samples / "iris"}
    with pytest.raises(OutputError, match="of the input model"):
        prepare(Request(source=source.format(**where), output=output.format(**where),
                        force=True), registry)


def test_prepare_checks_targets_and_options_first(sample, registry):
    from graphfreeze.errors import ConfigError

    model_dir = sample("iris")
    with pytest.raises(ConfigError, match="unknown target 'nope'"):
        prepare(Request(source=str(model_dir), targets=("nope",)), registry)
    with pytest.raises(ConfigError, match="option opset applies to no stage of android"):
        prepare(Request(source=str(model_dir), stage_options={"opset": 13}), registry)
    prepared = prepare(Request(source=str(model_dir), targets=("onnx", "server"), verify=False,
                               source_options={"step": 200, "tag": "serve"}), registry)
    assert prepared.source.name == "checkpoint" and prepared.source_options.step == 200
    assert all("verify" not in [s.stage.name for s in p.steps] for p in prepared.plans)


PREPARE_ONLY = """
import json, sys
from graphfreeze.convert import Request, prepare

kinds = {}
for source in sys.argv[1:]:
    prepared = prepare(Request(source=source, outputs=("probs",),
                               targets=("android", "tflite", "onnx", "server", "edge-int8")))
    kinds[source] = prepared.source.name
heavy = sorted(m for m in ("tensorflow", "keras", "tf_keras", "tf2onnx", "onnx", "onnxruntime")
               if m in sys.modules)
print(json.dumps({"kinds": kinds, "heavy": heavy}))
"""


def test_prepare_imports_no_tensorflow(samples, other_samples):
    sources = [str(samples / "iris"), str(samples / "cnn_v2" / "model.ckpt-200"),
               str(other_samples / "tf2_savedmodel"), str(other_samples / "model.h5"),
               str(other_samples / "frozen.pb")]
    done = subprocess.run([sys.executable, "-c", PREPARE_ONLY, *sources], check=True,
                          capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert list(report["kinds"].values()) == ["checkpoint", "checkpoint", "saved_model",
                                              "keras", "frozen_graph"]
    assert report["heavy"] == [], f"prepare imported {report['heavy']}"


def test_a_report_asked_of_the_api_without_a_reporter_is_one_line_before_any_work(sample, tmp_path):
    from graphfreeze.convert import execute
    from graphfreeze.errors import ConfigError

    folder = sample("iris")
    prepared = prepare(Request(source=str(folder / "model.ckpt-200"), outputs=("probs",),
                               output=str(tmp_path / "out/"),
                               run_options={"report": str(tmp_path / "report.html")}))
    with pytest.raises(ConfigError, match="reporter"):
        execute(prepared)
    assert not (tmp_path / "out").exists() and not (tmp_path / "report.html").exists()
