"""gs:// end to end against a real GCS JSON API on 127.0.0.1 (tests/gcs_emulator.py): a TF1 Saver
writes the model_dir straight to gs://, `freeze` reads it from there and writes every target back,
through TensorFlow's own GCS client. Both run as processes with the emulator's environment, since
TensorFlow reads it when its GCS filesystem starts."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from graphfreeze.io import temporaries

from tests.gcs_emulator import GcsEmulator

ROOT = Path(__file__).resolve().parents[2]
FREEZE = str(Path(sys.executable).with_name("freeze"))
TARGETS = "android,server,tflite,tflite-fp16,tflite-dynamic,edge-int8,onnx"
SUFFIXES = {"android": ".pb", "server": ".savedmodel", "tflite": ".tflite",
            "tflite-fp16": ".tflite-fp16.tflite", "tflite-dynamic": ".tflite-dynamic.tflite",
            "edge-int8": ".edge-int8.tflite", "onnx": ".onnx"}


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    with GcsEmulator(tmp_path_factory.mktemp("gcs")) as emulator:
        emulator.create_bucket("bucket")
        yield emulator


def run(gcs, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*args], env={**gcs.env(), "TF_CPP_MIN_LOG_LEVEL": "3"},
                          capture_output=True, text=True, timeout=300)


def digest(objects: dict[str, bytes], name: str) -> tuple[str, int]:
    """(sha256, bytes) as storage.tree_digest makes them: a file's, or a tree's (relative names
    and contents, sorted by relative name)."""
    if name in objects:
        return hashlib.sha256(objects[name]).hexdigest(), len(objects[name])
    files = sorted(k[len(name) + 1:] for k in objects if k.startswith(name + "/") and k[-1] != "/")
    sha = hashlib.sha256()
    for rel in files:
        sha.update(rel.encode() + b"\0" + objects[f"{name}/{rel}"])
    return sha.hexdigest(), sum(len(objects[f"{name}/{rel}"]) for rel in files)


def test_saver_to_gcs_then_every_target_to_gcs(gcs):

    built = run(gcs, sys.executable, str(ROOT / "models" / "iris_dnn.py"), "--out", "gs://bucket/iris")
    assert built.returncode == 0, built.stderr
    assert built.stdout.strip() == "gs://bucket/iris/model.ckpt-200"
    assert {"iris/checkpoint", "iris/model.ckpt-200.index", "iris/model.ckpt-200.meta"} <= \
        set(gcs.objects("bucket", "iris/"))
    # what a run killed with SIGKILL left: one of a dead pid on this host (removed), one of a run
    # on another host (kept: it may be alive), one of a user's own (kept)
    dead = f".model.ckpt-200.pb.graphfreeze.{temporaries._HOST}.999999999.1.0badc0de.tmp"
    other = ".model.ckpt-200.pb.graphfreeze.elsewhere.12.34.0badc0de.tmp"
    for name in (dead, other, ".model.ckpt-200.pb.tmp-mine"):
        gcs.put("bucket", f"out/{name}", b"partial")

    done = run(gcs, FREEZE, "--ckpt", "gs://bucket/iris", "--outputs", "probs", "--target", TARGETS,
               "-o", "gs://bucket/out")
    assert done.returncode == 0, done.stderr
    objects = {k[len("out/"):]: v for k, v in gcs.objects("bucket", "out/").items()}
    assert dead not in objects and {other, ".model.ckpt-200.pb.tmp-mine"} <= set(objects)
    for target, suffix in SUFFIXES.items():
        name = "model.ckpt-200" + suffix
        car = json.loads(objects[name + ".json"])
        assert car["target"] == target and car["file"] == name and car["verification"]["passed"]
        assert digest(objects, name) == (car["sha256"], car["bytes"]), target
        assert car["source"]["path"] == "gs://bucket/iris"
    assert "model.ckpt-200.savedmodel/saved_model.pb" in objects
    leftovers = [k for k in objects if ".graphfreeze." in k and k != other]
    assert not leftovers


def test_failed_runs_leave_no_object(gcs):
    if "iris/checkpoint" not in gcs.objects("bucket", "iris/"):
        built = run(gcs, sys.executable, str(ROOT / "models" / "iris_dnn.py"), "--out",
                    "gs://bucket/iris")
        assert built.returncode == 0, built.stderr
    bad_name = run(gcs, FREEZE, "--ckpt", "gs://bucket/iris", "--outputs", "nope", "-o",
                   "gs://bucket/bad")
    assert bad_name.returncode == 3 and "nope" in bad_name.stderr
    # android passes at tolerance 0 and is staged (a temporary object on gs://, a SavedModel in a
    # local temp dir); tflite-fp16 then fails verification: nothing may be left
    mismatch = run(gcs, FREEZE, "--ckpt", "gs://bucket/iris", "--outputs", "probs", "--target",
                   "android,server,tflite-fp16", "--tolerance", "0", "-o", "gs://bucket/bad")
    assert mismatch.returncode == 5, mismatch.stderr
    assert "model.ckpt-200.tflite-fp16.tflite: output 'probs:0' differs" in mismatch.stderr
    assert gcs.objects("bucket", "bad") == {}
