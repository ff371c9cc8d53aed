"""Real Estimator model_dirs and exports (TF 2.15's `tf.estimator`, checked in by
models/estimators.py: no venv here has it), frozen by the CLI from their own folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.test_bad_input import assert_failed

ESTIMATORS = Path(__file__).resolve().parents[2] / "models" / "estimators"
PROBS = "head/predictions/probabilities"
# the input_fn's features, as the iterator hands them out (sorted keys: age, color, hours)
ITERATOR = "IteratorGetNext:0,IteratorGetNext:1,IteratorGetNext:2"


@pytest.fixture
def estimator(tmp_path, monkeypatch):
    """estimator(name, part) -> a fresh copy of models/estimators/NAME, the working directory
    set to its PART folder (model_dir, export_parsing, export_raw)."""

    def copy(name: str, part: str) -> Path:
        shutil.copytree(ESTIMATORS / name, tmp_path / name)
        monkeypatch.chdir(tmp_path / name / part)
        return tmp_path / name / part

    return copy


def sidecar(folder: str) -> dict:
    return json.loads(next(Path(folder).glob("*.json")).read_text())


@pytest.mark.parametrize("name", ["dnn", "wide_deep"])
def test_model_dir_freezes_from_its_folder_with_the_iterator_as_inputs(estimator, freeze, name):
    """The meta graph's iterator is colocated with its dataset: the cut graph imports, each
    feature the iterator gave is an input of its own, the vocabulary's table is kept."""
    estimator(name, "model_dir")
    result = freeze("model.ckpt-25", "--outputs", PROBS, "--inputs", ITERATOR,
                    "--target", "android", "-o", "out/")
    assert result.exit_code == 0, result.output
    car = sidecar("out")
    assert car["verification"]["passed"], car["verification"]
    assert [i["node"] for i in car["inputs"]] == [f"IteratorGetNext/output_{k}" for k in range(3)]
    result = freeze("model.ckpt-25", "--outputs", PROBS, "--inputs", ITERATOR, "--no-verify",
                    "--target", "android", "-o", "unverified/")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", ["dnn", "wide_deep"])
def test_model_dir_with_only_its_outputs_takes_the_features_by_key(estimator, freeze, name):
    """What a user types: the features the iterator gives the head are the inputs, each named
    by its key (read from the feature columns reading it), verified on seeded features; the
    same tensors as --inputs IteratorGetNext:K give, and `freeze inspect` lists them."""
    estimator(name, "model_dir")
    result = freeze("model.ckpt-25", "--outputs", PROBS, "--target", "android", "-o", "out/")
    assert result.exit_code == 0, result.output
    car = sidecar("out")
    assert car["verification"]["passed"], car["verification"]
    assert [(i["node"], i["dtype"]) for i in car["inputs"]] == \
        [("age", "float32"), ("color", "string"), ("hours", "float32")]
    np.savez("features.npz", **{f"{k}:0": v for k, v in np.load(ESTIMATORS / "features.npz").items()})
    result = freeze("model.ckpt-25", "--outputs", PROBS, "--inputs", "age,color,hours",
                    "--target", "android", "--verify-data", "features.npz", "-o", "given/")
    assert result.exit_code == 0, result.output
    assert sidecar("given")["verification"]["passed"]
    result = freeze("inspect", ".", "--json", "--no-gaps")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [i["name"] for i in report["inputs"]] == ["age:0", "color:0", "hours:0"]
    assert report["outputs"][0]["name"] == f"{PROBS}:0"


def test_model_dir_without_outputs_lists_the_head(estimator, freeze):
    estimator("dnn", "model_dir")
    assert_failed(freeze("model.ckpt-25", "--target", "android", "-o", "out/"), 3,
                  "likely outputs: head/predictions/probabilities")


@pytest.mark.parametrize("target,phrase", [
    ("tflite", "cannot take op(s) SparseCross"),  # the embeddings' sparse lookups
    ("onnx", "no ONNX mapping at opset 18 for op(s) Bucketize, SparseCross"),  # tf2onnx's
])
def test_model_dir_to_a_target_without_the_sparse_ops_is_one_line(estimator, freeze, target,
                                                                    phrase):
    """TFLite's builtins and tf2onnx have no kernels for the feature columns' sparse ops
    (TFLiteConverter and tf2onnx refuse the same graph): said in one line, not exit 1."""
    estimator("wide_deep", "model_dir")
    result = freeze("model.ckpt-25", "--outputs", PROBS, "--inputs", ITERATOR,
                    "--target", target, "-o", "out/")
    assert_failed(result, result.exit_code, phrase)
    assert result.exit_code not in (0, 1)


@pytest.mark.parametrize("name", ["dnn", "wide_deep"])
def test_raw_export_freezes_verified(estimator, freeze, name):
    """A string feature folds through TensorFlow's Python session (was: internal error)."""
    estimator(name, "export_raw")
    np.savez("features.npz", **{f"{k}:0": v for k, v in np.load(ESTIMATORS / "features.npz").items()})
    result = freeze(".", "--signature", "predict", "--outputs", "probabilities",
                    "--target", "android", "--verify-data", "features.npz", "-o", "../out/")
    assert result.exit_code == 0, result.output
    assert sidecar("../out")["verification"]["passed"]


def test_parsing_export_takes_the_parsed_features_as_inputs(estimator, freeze):
    """The features the tf.Example parse op gives, by their keys: `color` (sparse) brings its
    indices and dense shape along; the parsing is cut away."""
    from tensorflow.core.framework import graph_pb2

    estimator("wide_deep", "export_parsing")
    result = freeze(".", "--inputs", "age,hours,color", "--outputs", PROBS,
                    "--target", "android", "-o", "../out/")
    assert result.exit_code == 0, result.output
    car = sidecar("../out")
    assert car["verification"]["passed"]  # seeded indices and dense shape that agree
    assert sorted(i["node"] for i in car["inputs"]) == \
        ["age", "color", "color/dense_shape", "color/indices", "hours"]
    frozen = graph_pb2.GraphDef.FromString(next(Path("../out").glob("*.pb")).read_bytes())
    assert not [n.op for n in frozen.node if n.op.startswith("ParseExample")]


@pytest.mark.parametrize("name,target", [("dnn", "android"), ("wide_deep", "android"),
                                         ("wide_deep", "server")])
def test_parsing_export_verifies_on_seeded_examples(estimator, freeze, name, target):
    """No --verify-data: the seeded inputs are serialized tf.Examples of the features the
    parse op declares (was: random strings, 'Could not parse example input')."""
    estimator(name, "export_parsing")
    result = freeze(".", "--outputs", PROBS, "--target", target, "-o", "../out/")
    assert result.exit_code == 0, result.output
    car = sidecar("../out")
    assert car["verification"]["passed"], car["verification"]
    assert [i["dtype"] for i in car["inputs"]] == ["string"]


@pytest.mark.parametrize("target", ["tflite", "openvino", "onnx"])
def test_a_target_that_cannot_parse_examples_names_the_features_as_inputs(estimator, freeze,
                                                                        target):
    """The refusal names what users do by hand: the parsed features as the inputs; typed as
    suggested, the model converts (`numeric`: no sparse op left once the parsing is cut), but
    to ONNX, where tf2onnx has no Bucketize: refused for that alone."""
    estimator("numeric", "export_parsing")
    result = freeze(".", "--outputs", PROBS, "--target", target, "-o", "../out/")
    assert_failed(result, 3, "ParseExampleV2", "--inputs age,hours")
    suggested = result.output.strip().rsplit("--inputs ", 1)[1].split()[0]
    result = freeze(".", "--outputs", PROBS, "--inputs", suggested, "--target", target,
                    "-o", "../out/")
    if target == "onnx":
        assert_failed(result, 3, "for op(s) Bucketize;")
        return
    assert result.exit_code == 0, result.output
    car = sidecar("../out")
    assert car["verification"]["passed"]
    assert [i["node"] for i in car["inputs"]] == ["age", "hours"]


def test_model_dir_missing_a_variable_the_head_needs(estimator, freeze):
    import tensorflow as tf

    estimator("dnn", "model_dir")
    reader = tf.train.load_checkpoint("model.ckpt-25")
    kept = [n for n in reader.get_variable_to_shape_map() if n != "dnn/logits/kernel"]
    tf.raw_ops.SaveV2(prefix="model.ckpt-25", tensor_names=kept, shape_and_slices=[""] * len(kept),
                      tensors=[reader.get_tensor(n) for n in kept])
    result = freeze("model.ckpt-25", "--outputs", PROBS, "--inputs", ITERATOR,
                    "--target", "android", "-o", "out/")
    assert_failed(result, 3, "'dnn/logits/kernel'", "not in checkpoint")


def test_parsing_export_asked_for_a_feature_it_does_not_parse(estimator, freeze):
    estimator("dnn", "export_parsing")
    result = freeze(".", "--inputs", "age,hours,colour", "--outputs", PROBS,
                    "--target", "android", "-o", "../out/")
    assert_failed(result, 3, "'colour'", "did you mean 'color'")
