"""`--inputs x:0[1,16,16,3]` fixes an input's shape in every target (tf2onnx's syntax), and a shape
that disagrees with the graph is one line naming both."""

from __future__ import annotations

import json

import onnx
import tensorflow as tf

from tests.e2e.test_bad_input import assert_failed
from tests.e2e.test_freeze_cli import load_graph

TARGETS = "android,server,tflite,onnx"


def test_a_fixed_shape_reaches_every_target(sample, freeze, tmp_path):
    model_dir = sample("cnn_v2")
    out = tmp_path / "out"
    result = freeze(model_dir, "--outputs", "probs", "--inputs", "images:0[1,16,16,3]",
                    "--target", TARGETS, "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    assert "input   images:0                 float32  [1, 16, 16, 3]" in result.output
    placeholder = next(n for n in load_graph(out / "model.ckpt-200.pb").node if n.name == "images")
    assert [d.size for d in placeholder.attr["shape"].shape.dim] == [1, 16, 16, 3]
    signature = tf.saved_model.load(str(out / "model.ckpt-200.savedmodel")).signatures[
        "serving_default"]
    assert signature.structured_input_signature[1]["images"].shape.as_list() == [1, 16, 16, 3]
    tflite = json.loads((out / "model.ckpt-200.tflite.json").read_text())
    assert tflite["tflite_io"]["inputs"]["images"]["shape"] == [1, 16, 16, 3]  # static
    model = onnx.load(str(out / "model.ckpt-200.onnx"))
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, 16, 16, 3]
    for target in ("pb", "savedmodel", "tflite", "onnx"):
        car = json.loads((out / f"model.ckpt-200.{target}.json").read_text())
        assert car["verification"]["passed"] and car["verification"]["batch_size"] == 1


def test_unknown_dims_keep_the_graphs_and_the_short_spelling_works(sample, freeze, tmp_path):
    model_dir = sample("cnn_v2")
    out = tmp_path / "m.pb"
    result = freeze(model_dir, "--outputs", "probs", "--inputs", "images[4,?,?,3]", "-o", out)
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "m.pb.json").read_text())["inputs"][0]["shape"] == [4, 16, 16, 3]


def test_a_shape_that_disagrees_names_both(sample, freeze, tmp_path):
    model_dir = sample("cnn_v2")
    for given, phrase in (("images:0[1,15,16,3]", "[1, 15, 16, 3] but the graph has [?, 16, 16, 3]"),
                          ("images:0[1,16,16]", "[1, 16, 16] but the graph has [?, 16, 16, 3]")):
        result = freeze(model_dir, "--outputs", "probs", "--inputs", given, "-o", tmp_path / "x.pb")
        assert_failed(result, 3, "input 'images:0'", phrase)
    result = freeze(model_dir, "--outputs", "probs[1,5]", "-o", tmp_path / "x.pb")
    assert_failed(result, 3, "only --inputs take a shape")
    assert not list(tmp_path.glob("x.pb*"))
