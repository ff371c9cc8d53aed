"""Untrusted models (models/hostile.py): `freeze` and `freeze inspect` touch nothing on the host
unless --unsafe; with --unsafe they behave as before (the file is written / read)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.e2e.test_bad_input import assert_failed

SECRET = b"graphfreeze-secret-42"
OUTSIDE = b"outside-secret-99"


@pytest.fixture
def built(hostile_models):
    return hostile_models


@pytest.fixture
def hostile(built, tmp_path):
    """(model path in a fresh copy, target dir the model would touch, emptied but for the
    secret)."""
    target = built / "target"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    (target / "secret.txt").write_bytes(SECRET)
    models = tmp_path / "models"
    shutil.copytree(built / "models", models)
    (models / "outside_secret.txt").write_bytes(OUTSIDE)  # what sm_asset's ../../ names
    ORIGINAL[models] = _files(models)
    return models, target


def _files(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


ORIGINAL: dict = {}  # models folder -> the files it came with


def written(folder):
    """Files in `folder` (a fresh copy of the hostile models) that the models did not come with."""
    return sorted(_files(folder) - ORIGINAL[folder])


def leaked(folder, secret: bytes) -> bool:
    """The secret in an artifact (not the models' own files): as a folded string constant, or as
    float32 byte values."""
    floats = np.frombuffer(secret, np.uint8).astype(np.float32).tobytes()
    return any(secret in data or floats in data
               for data in ((folder / p).read_bytes() for p in written(folder)))


WRITES = [("ckpt_write/model.ckpt-1", "write", "WriteFile", "ckpt_write.txt"),
          ("ckpt_save/model.ckpt-1", "steal", "SaveV2", "ckpt_save.index"),
          ("ckpt_print/model.ckpt-1", "print", "PrintV2", "ckpt_print.txt")]


@pytest.mark.parametrize("model,node,op,made", WRITES)
def test_control_dependency_cut_with_warning(hostile, freeze, model, node, op, made):
    models, target = hostile
    result = freeze(models / model, "--outputs", "probs")
    assert result.exit_code == 0, result.output
    assert f"'{node}' ({op})" in result.output and "warning" in result.output
    assert not (target / made).exists()


@pytest.mark.parametrize("model,node,op,made", WRITES)
def test_control_dependency_unsafe_runs(hostile, freeze, model, node, op, made):
    models, target = hostile
    assert freeze(models / model, "--outputs", "probs", "--unsafe").exit_code == 0
    assert (target / made).exists()


READS = [("ckpt_read/model.ckpt-1", "probs,leak", "'read' (ReadFile) reads files", SECRET),
         ("ckpt_glob/model.ckpt-1", "leak", "'glob' (MatchingFiles) reads files", None),
         ("frozen_read.pb", "leak", "'read' (ReadFile) reads files", SECRET)]


@pytest.mark.parametrize("model,outputs,phrase,secret", READS)
def test_read_refused(hostile, freeze, model, outputs, phrase, secret):
    models, _ = hostile
    result = freeze(models / model, "--outputs", outputs)
    assert_failed(result, 3, phrase, "--unsafe", model.split("/")[0])
    assert written(models) == []


@pytest.mark.parametrize("model,outputs,phrase,secret", READS)
def test_read_unsafe_runs(hostile, freeze, model, outputs, phrase, secret):
    """--unsafe converts (the op runs when verified); host ops are never constant-folded, so
    the host's data is not baked into the artifact."""
    models, target = hostile
    assert freeze(models / model, "--outputs", outputs, "--unsafe").exit_code == 0
    assert not leaked(models, secret or str(target / "secret.txt").encode())


def test_saved_model_write_refused(hostile, freeze):
    models, target = hostile
    assert_failed(freeze(models / "sm_write"), 3, "(WriteFile) writes files", "--unsafe")
    assert not (target / "sm_write.txt").exists() and written(models) == []
    assert freeze(models / "sm_write", "--unsafe").exit_code == 0
    assert (target / "sm_write.txt").exists()


def test_saved_model_asset_outside_refused(hostile, freeze):
    models, _ = hostile
    assert_failed(freeze(models / "sm_asset"), 3, "asset '../../outside_secret.txt'", "--unsafe")
    assert written(models) == []
    assert freeze(models / "sm_asset", "--unsafe").exit_code == 0  # reads it when verifying
    assert not leaked(models, OUTSIDE)  # ReadFile is never folded into the artifact


def test_saved_model_saver_writing_elsewhere_refused(hostile, freeze):
    """A SaveV2 made a control input of the saver's restore op, its prefix built from the saver's
    own filename: loading would run it."""
    models, target = hostile
    assert_failed(freeze(models / "sm_saver"), 3, "'evil' (SaveV2)", "--unsafe")
    assert not list(target.glob("sm_saver*")) and written(models) == []


def test_keras_tfoplambda_refused(hostile, freeze):
    models, target = hostile
    assert_failed(freeze(models / "keras_write.h5"), 3,
                  "layer 'tf.io.write_file' (TFOpLambda tf.io.write_file) writes files", "--unsafe")
    assert not (target / "keras_write.txt").exists()
    freeze(models / "keras_write.h5", "--unsafe")  # Keras writes the file, then fails to load
    assert (target / "keras_write.txt").exists()


@pytest.mark.parametrize("model,phrase,made", [
    ("frozen_read.pb", "(ReadFile) reads files", None),
    ("sm_write", "(WriteFile) writes files", "sm_write.txt"),
    ("sm_asset", "asset '../../outside_secret.txt'", None),
    ("keras_write.h5", "(TFOpLambda tf.io.write_file)", "keras_write.txt"),
])
def test_inspect_refuses(hostile, freeze, model, phrase, made):
    models, target = hostile
    assert_failed(freeze("inspect", models / model), 3, phrase, "--unsafe")
    assert made is None or not (target / made).exists()


@pytest.mark.parametrize("model,node,op,made", WRITES)
def test_inspect_touches_nothing(hostile, freeze, model, node, op, made):
    models, target = hostile
    freeze("inspect", models / model)
    assert not (target / made).exists()
