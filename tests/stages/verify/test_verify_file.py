"""`freeze verify ARTIFACT --golden DIR`: artifacts written earlier, checked against golden
outputs in their own runtimes without the original model; a changed, foreign or hostile file
is one line."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from tests.e2e.test_bad_input import assert_failed


@pytest.fixture(scope="module")
def written(samples, tmp_path_factory):
    """A folder with the sample CNN's artifacts of every format and golden/: onnx-fp16's weights
    in an external-data file, openvino's in its .bin (both artifacts of two files)."""
    from graphfreeze.convert import Request, execute, prepare

    out = tmp_path_factory.mktemp("written")
    rng = np.random.default_rng(5)
    np.savez(out / "val.npz", images=rng.standard_normal((12, 16, 16, 3)).astype(np.float32),
             labels=rng.integers(0, 5, 12))
    execute(prepare(Request(str(samples / "cnn_v2" / "model.ckpt-200"), outputs=("probs",),
                            targets=("android", "server", "tflite", "onnx", "onnx-fp16",
                                     "openvino"),
                            target_options={"onnx-fp16": {"external_data_bytes": 0}},
                            output=f"{out}/", stage_options={"verify_data": str(out / "val.npz"),
                                                         "save_golden": str(out / "golden")})))
    return out


EVERY_FORMAT = ["model.ckpt-200.pb", "model.ckpt-200.savedmodel", "model.ckpt-200.tflite",
                "model.ckpt-200.onnx", "model.ckpt-200.onnx-fp16.onnx", "model.ckpt-200.xml"]


def test_every_format_is_written():
    from graphfreeze.registry import Registry

    # (web's export_web writes no file of its own: tests/formats/web verifies its artifacts)
    suffixes = {f.export.suffix for f in Registry.default(plugins=False).formats()
                if f.export.suffix}
    assert suffixes == {"." + name.rsplit(".", 1)[1] for name in EVERY_FORMAT}


@pytest.mark.parametrize("name", EVERY_FORMAT)
def test_each_format_verifies_against_golden_outputs(written, freeze, name):
    result = freeze("verify", written / name, "--golden", written / "golden")
    assert result.exit_code == 0, result.output
    assert "passed against the golden inputs in" in result.output
    assert "top-1 accuracy" in result.output and "probs:0: max |diff|" in result.output


def test_too_tight_a_tolerance_fails_with_exit_5(written, freeze):
    result = freeze("verify", written / "model.ckpt-200.tflite", "--golden",
                    written / "golden", "--tolerance", "1e-12")
    assert result.exit_code == 5 and "against the golden outputs in" in result.output
    as_json = freeze("verify", written / "model.ckpt-200.onnx", "--golden", written / "golden",
                     "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.output)["passed"] is True


def test_changed_foreign_and_hostile_files_are_one_line(written, hostile_models, samples, freeze,
                                                        tmp_path):
    changed = tmp_path / "m.tflite"
    shutil.copy(written / "model.ckpt-200.tflite", changed)
    shutil.copy(written / "model.ckpt-200.tflite.json", tmp_path / "m.tflite.json")
    changed.write_bytes(changed.read_bytes() + b"\0")
    result = freeze("verify", changed, "--golden", written / "golden")
    assert result.exit_code == 3 and "its bytes are not those its sidecar records" in result.output
    (tmp_path / "m.tflite.json").write_text("[1, 2]")
    result = freeze("verify", changed, "--golden", written / "golden")
    assert result.exit_code == 3 and "not a graphfreeze sidecar (no target, inputs, outputs, " \
        "sha256)" in result.output
    alone = tmp_path / "alone.tflite"
    shutil.copy(written / "model.ckpt-200.tflite", alone)
    result = freeze("verify", alone, "--golden", written / "golden")
    assert result.exit_code == 3 and "no sidecar" in result.output
    hostile = tmp_path / "h.pb"  # a graph that reads the host's files, behind a valid sidecar
    shutil.copy(hostile_models / "models" / "frozen_read.pb", hostile)
    car = json.loads((written / "model.ckpt-200.pb.json").read_text())
    car["sha256"] = hashlib.sha256(hostile.read_bytes()).hexdigest()
    (tmp_path / "h.pb.json").write_text(json.dumps(car))
    result = freeze("verify", hostile, "--golden", written / "golden")
    assert result.exit_code == 3 and "has no node 'images:0', which its sidecar names" in \
        result.output
    car["inputs"][0].update(name="x:0", shape=[None, 4])
    car["outputs"][0].update(name="leak:0", shape=None)
    (tmp_path / "h.pb.json").write_text(json.dumps(car))
    (tmp_path / "hg").mkdir()  # golden outputs that fit it: the check is the file's, not theirs
    np.savez(tmp_path / "hg" / "golden.npz", **{"input:x:0": np.zeros((1, 4), np.float32),
                                                "output:leak:0": np.zeros(3, np.float32)})
    result = freeze("verify", hostile, "--golden", tmp_path / "hg")
    assert result.exit_code == 3 and "ReadFile" in result.output, result.output
    golden = tmp_path / "hg" / "golden.npz"
    golden.write_bytes(golden.read_bytes()[:100])  # a truncated golden file: one line, exit 3
    result = freeze("verify", hostile, "--golden", tmp_path / "hg")
    assert result.exit_code == 3 and "golden.npz: not an .npz or .npy file numpy reads (File " \
        "is not a zip file); save it again with --save-golden" in result.output, result.output
    garbage = tmp_path / "g.onnx"  # bytes that are no ONNX model, behind a sidecar that fits them
    garbage.write_bytes(b"not an onnx model")
    car = json.loads((written / "model.ckpt-200.onnx.json").read_text())
    car["sha256"] = hashlib.sha256(garbage.read_bytes()).hexdigest()
    (tmp_path / "g.onnx.json").write_text(json.dumps(car))
    result = freeze("verify", garbage, "--golden", written / "golden")
    assert result.exit_code == 3 and "not an ONNX model" in result.output, result.output
    other = tmp_path / "other"
    from graphfreeze.convert import Request, execute, prepare

    execute(prepare(Request(str(samples / "iris" / "model.ckpt-200"), outputs=("probs",),
                            output=str(tmp_path / "iris.pb"),
                            stage_options={"save_golden": str(other)})))
    result = freeze("verify", written / "model.ckpt-200.pb", "--golden", other)
    assert result.exit_code == 3 and "golden outputs of another model: this model's input " \
        "'images:0' is not in them (they have x:0)" in result.output


def test_from_the_models_own_folder_with_relative_paths(samples, freeze, tmp_path, monkeypatch):
    """`freeze --verify-data val.npz --save-golden golden` then `freeze verify m.tflite --golden
    golden`, typed in the checkpoint's folder."""
    folder = tmp_path / "cnn"
    shutil.copytree(samples / "cnn_v2", folder)
    np.savez(folder / "val.npz", images=np.ones((3, 16, 16, 3), np.float32))
    monkeypatch.chdir(folder)
    result = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "tflite",
                    "--verify-data", "val.npz", "--save-golden", "golden", "-o", "m.tflite")
    assert result.exit_code == 0, result.output
    assert "compared with the original on val.npz (3 rows)" in result.output
    assert (folder / "golden" / "golden.npz").exists() and (folder / "m.tflite").exists()
    result = freeze("verify", "m.tflite", "--golden", "golden")
    assert result.exit_code == 0 and "passed against the golden inputs in golden" in result.output


def test_the_golden_set_is_the_largest_a_target_verified_on(samples, freeze, tmp_path,
                                                            monkeypatch):
    """android verifies on 2 seeded rows, edge-int8 on its batch_size: the golden set is the
    int8 target's whatever the order of --target (it was the first target's)."""
    folder = tmp_path / "iris"
    shutil.copytree(samples / "iris", folder)
    monkeypatch.chdir(folder)
    result = freeze("model.ckpt-200", "--outputs", "probs", "--target", "android,edge-int8",
                    "--save-golden", "golden", "-o", "out/")
    assert result.exit_code == 0, result.output
    car = json.loads((folder / "out" / "model.ckpt-200.edge-int8.tflite.json").read_text())
    assert json.loads((folder / "golden" / "golden.json").read_text())["rows"] == \
        car["verification"]["batch_size"] > 2
    assert sorted(p.name for p in (folder / "golden").iterdir()) == ["golden.json", "golden.npz"]
    result = freeze("verify", "out/model.ckpt-200.edge-int8.tflite", "--golden", "golden")
    assert result.exit_code == 0, result.output


def test_a_golden_folder_that_cannot_be_written_names_its_flag(samples, freeze, tmp_path,
                                                                monkeypatch):
    """--save-golden under a file: one line telling to change --save-golden (not -o), exit 4,
    and nothing written, the artifact neither."""
    folder = tmp_path / "iris"
    shutil.copytree(samples / "iris", folder)
    (folder / "notes").write_text("a file")
    monkeypatch.chdir(folder)
    before = sorted(p.name for p in folder.iterdir())
    result = freeze("model.ckpt-200", "--outputs", "probs", "--save-golden", "notes/golden",
                    "-o", "m.pb")
    assert result.exit_code == 4, result.output
    assert result.stderr == ("error: notes/golden/golden.npz: notes is a file, not a directory; "
                             "choose another --save-golden\n")
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("edit,says", [
    ({"inputs": None}, "inputs is not a list of tensors"),
    ({"inputs": [None]}, "inputs holds None, not a tensor's name, dtype and shape"),
    ({"inputs": [{}]}, "inputs holds {}, not a tensor's name"),
    ({"inputs": "x"}, "inputs is not a list of tensors"),
    ({"outputs": []}, "outputs is not a list of tensors"),
    ({"target": 5}, "target 5 is not a target's name"),
    ({"target": None}, "target None is not a target's name"),
    ({"sha256": 5}, "sha256 5 is not a sha256"),
    ({"verification": "x"}, "verification is not a record"),
    ({"schema_version": 99}, "sidecar schema 99, and this graphfreeze reads 1 and 2"),
    ({"sha256": None, "drop": "sha256"}, "not a graphfreeze sidecar (no sha256)"),
    ({"target": "nope"}, "unknown target 'nope'"),  # a name this graphfreeze lacks: exit 6
])
def test_an_edited_sidecar_is_one_line(written, freeze, tmp_path, edit, says):
    """Whatever a hand edit leaves in the sidecar: one line naming it, exit 3."""
    shutil.copy(written / "model.ckpt-200.tflite", tmp_path / "m.tflite")
    car = json.loads((written / "model.ckpt-200.tflite.json").read_text())
    car.update({k: v for k, v in edit.items() if k != "drop"})
    car.pop(edit.get("drop", "-"), None)
    (tmp_path / "m.tflite.json").write_text(json.dumps(car))
    result = freeze("verify", tmp_path / "m.tflite", "--golden", written / "golden")
    assert_failed(result, 6 if edit.get("target") == "nope" else 3, "m.tflite.json: ", says)


def test_a_golden_folder_without_rows_is_one_line(written, freeze, tmp_path):
    """(An output's first dimension need not be rows: a detector's boxes are not checked.)"""
    arrays = dict(np.load(written / "golden" / "golden.npz"))
    (tmp_path / "g").mkdir()
    np.savez(tmp_path / "g" / "golden.npz", **{k: v[:0] for k, v in arrays.items()})
    result = freeze("verify", written / "model.ckpt-200.tflite", "--golden", tmp_path / "g")
    assert_failed(result, 3, "golden.npz: no rows")


@pytest.mark.parametrize("name,part", [
    ("model.ckpt-200.xml", "model.ckpt-200.bin"),
    ("model.ckpt-200.onnx-fp16.onnx", "model.ckpt-200.onnx-fp16.onnx.data")])
def test_an_artifact_of_two_files_is_checked_whole(written, freeze, tmp_path, name, part):
    """The sidecar's sha256 covers both files: a missing or changed second file is one line."""
    for file in (name, f"{name}.json", part):
        shutil.copy(written / file, tmp_path / file)
    assert freeze("verify", tmp_path / name, "--golden", written / "golden").exit_code == 0
    (tmp_path / part).write_bytes((tmp_path / part).read_bytes()[:-4] + b"\0\0\0\1")
    result = freeze("verify", tmp_path / name, "--golden", written / "golden")
    assert result.exit_code == 3, result.output
    assert f"its bytes ({name} + {part}) are not those its sidecar records" in result.output
    (tmp_path / part).unlink()
    result = freeze("verify", tmp_path / name, "--golden", written / "golden")
    assert result.exit_code == 3, result.output
    assert f"{part} is missing; the artifact is {name} + {part}: copy them together" \
        in result.output


def test_a_schema_1_sidecar_still_verifies(written, freeze, tmp_path):
    """Sidecars written before schema 2 named the formats frozen_graph_pb and openvino_ir."""
    for name, old in (("model.ckpt-200.xml", "openvino_ir"), ("model.ckpt-200.pb", "frozen_graph_pb")):
        stem = name.rsplit(".", 1)[0]
        for file in {name, f"{stem}.bin"} if name.endswith(".xml") else {name}:
            shutil.copy(written / file, tmp_path / file)
        car = json.loads((written / f"{name}.json").read_text())
        assert car["schema_version"] == 2 and car["format"] in ("openvino", "frozen_graph")
        (tmp_path / f"{name}.json").write_text(json.dumps({**car, "schema_version": 1,
                                                           "format": old}))
        result = freeze("verify", tmp_path / name, "--golden", written / "golden", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["format"] == car["format"]
