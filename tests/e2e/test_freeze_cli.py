"""Whole runs of `freeze` on real checkpoints: the headline job and its guarantees."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import tensorflow as tf

BRANCH_OPS = {"If", "StatelessIf", "Switch", "Merge", "RefSwitch"}


def load_graph(path):
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(path.read_bytes())
    return graph_def


def run_frozen(path, feeds, fetch):
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(load_graph(path), name="")
    with tf.compat.v1.Session(graph=graph) as sess:
        return sess.run(fetch, feeds)


@pytest.mark.parametrize("name,input_name", [
    ("iris", "x:0"), ("iris_resource", "x:0"), ("iris_partitioned", "x:0"),
    ("cnn_v1", "images:0"), ("cnn_v2", "images:0"),
])
def test_freezes_every_sample_clean_and_verified(sample, freeze, name, input_name):
    model_dir = sample(name)
    result = freeze("--ckpt", model_dir / "model.ckpt-200", "--outputs", "probs")
    assert result.exit_code == 0, result.output
    assert f"input   {input_name}" in result.output
    assert "output  probs:0" in result.output
    frozen = model_dir / "model.ckpt-200.pb"
    graph_def = load_graph(frozen)
    ops = {n.op for n in graph_def.node}
    assert not ops & BRANCH_OPS, ops
    assert not any("Random" in op or op.startswith("_") for op in ops), ops
    assert not ops & {"VariableV2", "VarHandleOp", "ReadVariableOp", "Assign", "SaveV2"}
    assert not ops & {"FusedBatchNormV3", "FusedBatchNorm"}, "batch norms folded into layers"
    assert all(not n.device for n in graph_def.node)
    sidecar = json.loads((model_dir / "model.ckpt-200.pb.json").read_text())
    assert sidecar["sha256"] == hashlib.sha256(frozen.read_bytes()).hexdigest()
    assert sidecar["verification"]["passed"] is True
    assert sidecar["verification"]["max_abs_diff"]["probs:0"] <= 1e-5
    assert sidecar["inputs"][0]["name"] == input_name
    assert sidecar["outputs"] == [{"name": "probs:0", "node": "probs", "dtype": "float32",
                                   "shape": sidecar["outputs"][0]["shape"]}]
    assert sidecar["target"] == "android" and sidecar["source"]["kind"] == "checkpoint"


def test_frozen_output_is_deterministic_without_dropout_noise(sample, freeze):
    model_dir = sample("iris_resource")  # dropout with a baked-in rate, no flag
    prefix = model_dir / "model.ckpt-200"
    assert freeze("--ckpt", prefix, "--outputs", "probs:0").exit_code == 0
    first = (model_dir / "model.ckpt-200.pb").read_bytes()
    first_json = (model_dir / "model.ckpt-200.pb.json").read_bytes()
    assert freeze("--ckpt", prefix, "--outputs", "probs:0", "--force").exit_code == 0
    assert (model_dir / "model.ckpt-200.pb").read_bytes() == first
    assert (model_dir / "model.ckpt-200.pb.json").read_bytes() == first_json
    x = np.random.default_rng(1).normal(size=(4, 4)).astype(np.float32)
    a = run_frozen(model_dir / "model.ckpt-200.pb", {"x:0": x}, "probs:0")
    b = run_frozen(model_dir / "model.ckpt-200.pb", {"x:0": x}, "probs:0")
    np.testing.assert_array_equal(a, b)
    sidecar = json.loads(first_json)
    assert sidecar["dropouts_removed"], "the baked-in dropout was found and removed"


def test_model_dir_uses_latest_checkpoint_and_step_picks_another(sample, freeze, tmp_path):
    model_dir = sample("iris")
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "-o", tmp_path / "out.pb")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.pb").exists() and (tmp_path / "out.pb.json").exists()
    result = freeze("--ckpt", model_dir, "--step", "999", "--outputs", "probs",
                    "-o", tmp_path / "other.pb")
    assert result.exit_code == 3
    assert "no checkpoint for step 999 (steps here: 200)" in result.output


def test_keep_prob_flag_is_folded_not_an_input(sample, freeze, tmp_path):
    model_dir = sample("iris")
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "-o", tmp_path / "f.pb")
    sidecar = json.loads((tmp_path / "f.pb.json").read_text())
    assert [i["name"] for i in sidecar["inputs"]] == ["x:0"], result.output
    assert sidecar["flags_folded"] == {"dnn/keep_prob": 1.0}
    assert sidecar["node_count"] <= 16


def test_explicit_inputs_cut_the_graph(sample, freeze, tmp_path):
    model_dir = sample("iris")
    out = tmp_path / "head.pb"
    result = freeze("--ckpt", model_dir, "--inputs", "dnn/Relu:0", "--outputs", "probs", "-o", out)
    assert result.exit_code == 0, result.output
    sidecar = json.loads((tmp_path / "head.pb.json").read_text())
    assert [i["name"] for i in sidecar["inputs"]] == ["dnn/Relu:0"]
    assert sidecar["inputs"][0]["shape"] == [None, 16]
    assert "MatMul" in sidecar["op_counts"] and sidecar["op_counts"]["MatMul"] == 2
    assert sidecar["verification"]["passed"]


def test_a_flag_placeholder_given_as_input_is_fed_and_inputs_must_cover_every_placeholder(
        sample):
    """iris's dnn/keep_prob (a PlaceholderWithDefault) in --inputs, in the model's folder: it
    becomes a Placeholder, fed (its default was cut away: TensorFlow refused the graph, exit 1);
    --inputs that leave out the placeholder x the outputs need are one line, exit 3."""
    import subprocess
    import sys

    folder = sample("iris")
    run = [sys.executable, "-m", "graphfreeze_cli.main", "--ckpt", "model.ckpt-200", "--outputs",
           "probs", "--inputs"]
    done = subprocess.run([*run, "x,dnn/keep_prob"], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    car = json.loads((folder / "model.ckpt-200.pb.json").read_text())
    assert [i["name"] for i in car["inputs"]] == ["x:0", "dnn/keep_prob:0"]
    assert car["verification"]["passed"] and "PlaceholderWithDefault" not in car["op_counts"]
    done = subprocess.run([*run, "dnn/keep_prob", "-o", "other.pb"], cwd=folder,
                          capture_output=True, text=True)
    assert done.returncode == 3 and done.stderr.strip() == (
        "error: outputs probs in model.ckpt-200.meta need placeholder 'x', which --inputs does "
        "not name; add it to --inputs (or leave --inputs out)")
    assert not (folder / "other.pb").exists()


def test_unneeded_input_is_refused(sample, freeze):
    result = freeze("--ckpt", sample("iris"), "--inputs", "y", "--outputs", "probs")
    assert result.exit_code == 3
    assert "input 'y:0' is not needed by outputs probs" in result.output
