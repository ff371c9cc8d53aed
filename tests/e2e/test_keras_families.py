"""Keras families of the second zoo (issue 24, models/families_keras.py) through the real CLI:
keras-hub `.keras` files load (keras-hub imported because the config names its classes) and
trace with the model's own input dict; their `model.export` SavedModels calibrate edge-int8 on
token ids within the vocabulary; a custom object registered under a package prefix is asked for
by its own name; a keras-hub file without keras-hub installed is one line naming the extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

from tests.e2e.test_bad_input import assert_failed

ROOT = Path(__file__).resolve().parents[2]


def _tokens(path: Path, names: list[str], rows: int = 8) -> Path:
    """Token data as users have it: ids within the vocabulary (100), segments and masks 0/1."""
    rng = np.random.default_rng(0)
    arrays = {n: (rng.integers(0, 100, (rows, 16)) if n == "token_ids" else
                  rng.integers(0, 2, (rows, 16)) if n == "segment_ids" else
                  np.ones((rows, 16))).astype(np.int32) for n in names}
    np.savez(path, **arrays)
    return path


def _car(folder: Path, suffix: str) -> dict:
    (artifact,) = folder.glob(f"*{suffix}")
    return json.loads(artifact.with_name(artifact.name + ".json").read_text())


def test_keras_hub_keras_files_trace_with_their_input_dict(family, freeze, tmp_path):
    """BertBackbone takes {token_ids, segment_ids, padding_mask}: the traced graph has those
    three inputs and both outputs named by the keys of its output dict (as `model.export` names
    them), and every artifact verifies on the user's token data."""
    path, args = family("hub_bert_keras")
    data = _tokens(tmp_path / "tokens.npz", ["padding_mask", "segment_ids", "token_ids"])
    result = freeze(path, *args, "--target", "android,tflite", "--verify-data", data,
                    "-o", f"{tmp_path}/bert/")
    assert result.exit_code == 0, result.output
    for suffix in (".pb", ".tflite"):
        car = _car(tmp_path / "bert", suffix)
        assert car["verification"]["passed"], car["verification"]
        assert sorted(i["node"] for i in car["inputs"]) == ["padding_mask", "segment_ids",
                                                            "token_ids"], car["inputs"]
        assert [o["name"] for o in car["outputs"]] == ["pooled_output:0",
                                                       "sequence_output:0"], car["outputs"]


def test_keras_hub_export_calibrates_edge_int8_within_the_vocabulary(family, freeze, tmp_path):
    """Synthetic calibration feeds segment ids below num_segments (2) and token ids below the
    vocabulary: the calibrator no longer runs a gather out of its table, and verification's
    seeded inputs stay within them too (the artifact verifies); calibration data with ids past
    the vocabulary is one line."""
    path, args = family("hub_bert_export")
    bad = tmp_path / "ids.npz"
    _tokens(bad, ["padding_mask", "segment_ids", "token_ids"])
    with np.load(bad) as data:
        arrays = {**data, "token_ids": data["token_ids"] + 100}  # past the vocabulary
    np.savez(bad, **arrays)
    result = freeze(path, *args, "--target", "edge-int8", "--no-verify", "--calibration", bad,
                    "-o", f"{tmp_path}/refused/")
    assert_failed(result, 3, "ids.npz", "'token_ids:0'", "vocabulary of 100")
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").iterdir())
    result = freeze(path, *args, "--target", "edge-int8", "-o", f"{tmp_path}/int8/")
    assert result.exit_code == 0, result.output
    car = _car(tmp_path / "int8", ".tflite")
    assert car["calibration"] == "synthetic", car
    assert car["verification"]["passed"], car["verification"]  # on seeded ids in range
    from graphfreeze.formats.tflite.interpreter import interpreter

    interp = interpreter(model_path=str(next((tmp_path / "int8").glob("*.tflite"))))
    interp.allocate_tensors()
    for detail in interp.get_input_details():
        interp.set_tensor(detail["index"], np.ones(detail["shape"], detail["dtype"]))
    interp.invoke()


def test_a_prefixed_custom_object_is_asked_for_by_its_own_name(family, freeze, tmp_path,
                                                              monkeypatch):
    """`kecam>hard_swish` is the function `hard_swish` of package kecam, not 'kecam'; given
    with --custom-objects (even unregistered) it loads."""
    path, args = family("prefixed_custom")
    result = freeze(path, "--target", "android", "-o", f"{tmp_path}/refused/")
    assert_failed(result, 3, "'hard_swish'", "package 'kecam'", "--custom-objects")
    monkeypatch.syspath_prepend(str(ROOT / "models"))
    result = freeze(path, *args, "--target", "android", "-o", f"{tmp_path}/ok/")
    assert result.exit_code == 0, result.output
    assert _car(tmp_path / "ok", ".pb")["verification"]["passed"]


def test_a_class_keras_hub_does_not_register_is_refused(family, freeze, tmp_path):
    path, _ = family("hub_gpt2_lm_keras")
    forged = tmp_path / "forged.keras"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(forged, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "config.json":
                data = data.replace(b'"keras_hub>GPT2CausalLM"', b'"keras_hub>Evil"')
            dst.writestr(item, data)
    result = freeze(forged, "--target", "android", "-o", f"{tmp_path}/out/")
    assert_failed(result, 3, "forged.keras", "GPT2CausalLM", "keras_hub does not register")


def test_a_keras_hub_file_without_keras_hub_names_the_extra(family, tmp_path):
    """The real CLI in an environment without keras_hub: the venv's packages but keras_hub on
    sys.path (no site processing), this checkout's graphfreeze."""
    import graphfreeze
    import graphfreeze_cli

    path, args = family("hub_bert_keras")
    site = next(p for p in sys.path if p.endswith("site-packages") and
                os.path.isdir(os.path.join(p, "keras_hub")))
    shadow = tmp_path / "site"
    shadow.mkdir()
    for entry in os.listdir(site):
        if not entry.startswith(("keras_hub", "graphfreeze", "__editable__")):
            (shadow / entry).symlink_to(os.path.join(site, entry))
    for package in (graphfreeze, graphfreeze_cli):  # wherever this checkout's packages are
        (shadow / package.__name__).symlink_to(os.path.dirname(package.__file__))
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    code = "import sys; from graphfreeze_cli.main import main; sys.argv[0] = 'freeze'; main()"
    done = subprocess.run([sys.executable, "-S", "-c", code, path.name, *args, "--target",
                           "android", "-o", "out/"], cwd=path.parent, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 6, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert "keras_hub>BertBackbone" in line and "-m pip install '" in line and \
        "[keras-hub]'" in line, line
    assert not (path.parent / "out").exists()


def test_a_dynamic_sequence_length_reaches_tflite(family, freeze, tmp_path, monkeypatch):
    """Without --inputs a keras-hub export takes [?,?]: tflite keeps both dimensions dynamic
    (as TFLiteConverter does on the SavedModel) and verifies at the data's length; edge-int8
    calibrates at that length and says so."""
    path, _ = family("hub_bert_export")
    monkeypatch.chdir(path.parent)
    data = _tokens(tmp_path / "tokens.npz", ["padding_mask", "segment_ids", "token_ids"], rows=4)
    result = freeze(path.name, "--target", "tflite,edge-int8", "--verify-data", data,
                    "-o", f"{tmp_path}/dyn/")
    assert result.exit_code == 0, result.output
    assert "dynamic dimensions are fixed to the length of" in " ".join(result.output.split())
    for suffix, shape in ((".edge-int8.tflite", [1, 16]), ("saved_model.tflite", [-1, -1])):
        car = _car(tmp_path / "dyn", suffix)
        assert car["verification"]["passed"], car["verification"]
        assert {i["shape"] == shape for i in car["tflite_io"]["inputs"].values()} == {True}, car
