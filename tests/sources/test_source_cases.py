"""Issue 14's source cases (models/source_cases.py): a tf_keras-written `.keras`, tfmot CQAT and
custom-QuantizeConfig QAT files, a V1-format TF1 checkpoint, a meta graph whose RestoreV2 lists
too few keys. Each converts and verifies, or is one InputError line naming the file and node."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.e2e.test_freeze_cli import load_graph


@pytest.fixture(scope="module")
def cases(source_cases):
    return source_cases


def _sidecar(path) -> dict:
    return json.loads(path.with_name(path.name + ".json").read_text())


def _refused(result, *phrases):
    assert result.exit_code == 3, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: ") and "Traceback" not in result.output, result.output
    for phrase in phrases:
        assert phrase in line, line
    return line


def test_tf_keras_dot_keras_loads_with_tf_keras(cases, freeze, tmp_path):
    out = tmp_path / "m.pb"
    result = freeze(cases / "tf_keras.keras", "-o", out)
    assert result.exit_code == 0, result.output
    car = _sidecar(out)
    assert car["verification"]["passed"]
    assert [t["name"] for t in car["inputs"]] == ["image:0"]
    assert [t["name"] for t in car["outputs"]] == ["probs:0"]


def test_tf_keras_dot_keras_keeps_the_safety_checks(cases, freeze, tmp_path):
    _refused(freeze(cases / "tf_keras_lambda.keras", "-o", tmp_path / "m.pb"),
             "tf_keras_lambda.keras", "Lambda", "--unsafe")
    assert not list(tmp_path.iterdir())


def test_cqat_loads_and_keeps_its_clusters(cases, freeze, tmp_path):
    out = tmp_path / "cqat.pb"
    result = freeze(cases / "cqat.h5", "--target", "android,tflite", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    assert _sidecar(out)["verification"]["passed"]
    graph_def = load_graph(out)
    fake_quant = [n for n in graph_def.node if n.op.startswith("FakeQuant")]
    assert fake_quant  # QAT semantics kept
    from tensorflow.python.framework import tensor_util

    kernels = [tensor_util.MakeNdarray(n.attr["value"].tensor) for n in graph_def.node
               if n.op == "Const" and n.attr["value"].tensor.tensor_shape.dim and
               len(n.attr["value"].tensor.tensor_shape.dim) >= 2]
    assert kernels and all(len(np.unique(k)) <= 4 for k in kernels)


def test_custom_quantize_config_from_the_working_directory(cases, freeze, tmp_path,
                                                           monkeypatch):
    monkeypatch.chdir(cases)  # as a user runs `freeze` beside their module
    out = tmp_path / "q.pb"
    result = freeze("qat_custom.h5", "--custom-objects", "quantize_configs:DenseQuantizeConfig",
                    "-o", out)
    assert result.exit_code == 0, result.output
    assert _sidecar(out)["verification"]["passed"]
    assert any(n.op.startswith("FakeQuant") for n in load_graph(out).node)


def test_custom_quantize_config_missing_names_it_and_the_flag(cases, freeze, tmp_path,
                                                             monkeypatch):
    """Keras' own words ("Unknown None: ... custom_object_scope") are advice to a programmer."""
    monkeypatch.chdir(cases)
    line = _refused(freeze("qat_custom.h5", "-o", tmp_path / "q.pb"))
    assert line == ("error: qat_custom.h5: needs the custom object 'DenseQuantizeConfig'; pass "
                    "--custom-objects MODULE:DenseQuantizeConfig")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("path", ["v1/model.ckpt-7", "v1", "v1/model.ckpt-7.meta",
                                  "v1_sharded/model.ckpt-7", "v1_sharded",
                                  "v1_sharded/model.ckpt-7-00000-of-00001"])
def test_v1_checkpoint_converts(cases, freeze, tmp_path, path):
    out = tmp_path / "v1.pb"
    result = freeze(cases / path, "--outputs", "probs", "-o", out)
    assert result.exit_code == 0, result.output
    car = _sidecar(out)
    assert car["verification"]["passed"]
    from tests.e2e.test_freeze_cli import run_frozen

    x = np.array([[1.0, 0.0, 0.0]], np.float32)
    logits = x @ np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32) + [0.5, -0.5]
    want = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(run_frozen(out, {"x:0": x}, "probs:0"), want, rtol=1e-6)


@pytest.mark.parametrize("path", ["v1", "v1_sharded"])
def test_v1_checkpoint_inspect(cases, freeze, path):
    result = freeze("inspect", cases / path, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert {v["name"] for v in info["variables"]} == {"w", "b"}


def test_v1_checkpoint_without_its_file_names_it(cases, freeze, tmp_path):
    import shutil

    shutil.copytree(cases / "v1", tmp_path / "v1")
    (tmp_path / "v1" / "model.ckpt-7").unlink()
    _refused(freeze(tmp_path / "v1" / "model.ckpt-7", "--outputs", "probs", "-o",
                    tmp_path / "x.pb"), "model.ckpt-7.index", "V1")


def test_restore_listing_too_few_keys_is_one_line(cases, freeze, tmp_path):
    _refused(freeze(cases / "short_restore" / "model.ckpt-7", "--outputs", "probs", "-o",
                    tmp_path / "x.pb"), "model.ckpt-7.meta", "'save/RestoreV2'", "corrupt")
