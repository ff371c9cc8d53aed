"""`freeze inspect` on each kind of model: what it is, before converting it."""

from __future__ import annotations

import json

import pytest


def inspect_json(freeze, path):
    result = freeze("inspect", path, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_checkpoint_report(sample, freeze):
    report = inspect_json(freeze, sample("iris"))
    assert report["kind"] == "checkpoint"
    names = {v["name"]: v for v in report["variables"]}
    assert names["dnn/hidden1/kernel"]["shape"] == [4, 16]
    assert names["dnn/hidden1/kernel"]["bytes"] == 4 * 16 * 4
    assert report["outputs"][0]["name"] == "probs:0"
    assert report["inputs"] == [{"name": "x:0", "dtype": "float32", "shape": [None, 4]}]
    assert report["flags"] == {"dnn/keep_prob": 1.0}
    assert report["op_counts"]["Softmax"] == 1
    assert report["targets"]["onnx"]["unsupported"] == []
    assert report["targets"]["tflite"]["unsupported"] == []
    assert report["size_bytes"] > 0


def test_ops_a_target_cannot_take_are_listed(sample, freeze):
    report = inspect_json(freeze, sample("iris_odd_op"))
    assert "Igamma" in report["targets"]["onnx"]["unsupported"]
    tflite = report["targets"]["tflite"]
    assert tflite["no_kernel"] == ["Igamma"] and tflite["needs_allow_tf_ops"] == ["Cumprod"]


@pytest.mark.parametrize("name,kind", [("tf2_savedmodel", "saved_model"),
                                       ("tf1_savedmodel", "saved_model"),
                                       ("model.keras", "keras"), ("model.h5", "keras"),
                                       ("frozen.pb", "frozen_graph")])
def test_other_kinds(other, freeze, name, kind):
    """Each kind described; every target converts these models, and inspect says so (a Keras
    model's reads of its variables once left MatMul unprobed: a false openvino gap)."""
    report = inspect_json(freeze, other(name))
    assert report["kind"] == kind and report["outputs"] and report["inputs"]
    for gaps in report["targets"].values():
        assert gaps["summary"].endswith((": all ops convert", ": all checked ops convert")), \
            gaps["summary"]
    if kind == "saved_model":
        assert report["tag_sets"] == [["serve"]]
        assert [s["key"] for s in report["signatures"]] == ["serving_default"]
        assert report["variables"]
    if kind == "keras":
        assert report["outputs"][0]["name"] == "probabilities:0"
        assert report["variables"]


def test_human_readable_report(sample, freeze):
    result = freeze("inspect", sample("iris"))
    assert result.exit_code == 0, result.output
    for text in ("checkpoint", "likely inputs and outputs", "probs:0", "variables: 21",
                 "onnx (opset", "tflite builtins"):
        assert text in result.output


def test_inspect_json_is_stable(sample, freeze):
    model = sample("iris")
    first = freeze("inspect", model, "--json").output
    assert first == freeze("inspect", model, "--json").output


def _damage_first_variable(model, shape_hint: bool):
    """A fuzzed SavedModel: its first variable says shape 2**40 (or, with `shape_hint`, every
    node's `_output_shapes` hint disagrees with the node)."""
    from tensorflow.core.framework import tensor_shape_pb2
    from tensorflow.core.protobuf import saved_model_pb2

    path = model / "saved_model.pb"
    saved = saved_model_pb2.SavedModel.FromString(path.read_bytes())
    nodes = saved.meta_graphs[0].graph_def.node
    for node in nodes:
        if shape_hint:
            hint = node.attr["_output_shapes"].list
            del hint.shape[:]
            hint.shape.add().CopyFrom(tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=5)] * 3))
        elif node.op == "VarHandleOp":
            node.attr["shape"].shape.dim[0].size = 2 ** 40
            break
    path.write_bytes(saved.SerializeToString())


@pytest.mark.parametrize("name", ["tf1_savedmodel", "tf2_savedmodel"])
def test_shape_hints_that_disagree_with_the_graph_are_dropped(other, freeze, name):
    """`_output_shapes` is only a hint: inspect reads the graph without it."""
    model = other(name)
    _damage_first_variable(model, shape_hint=True)
    report = inspect_json(freeze, model)
    assert report["outputs"] and report["targets"]["tflite"]["summary"]


@pytest.mark.parametrize("name", ["tf1_savedmodel", "tf2_savedmodel"])
def test_a_variable_shape_the_graph_cannot_take_is_one_line(other, freeze, name):
    model = other(name)
    _damage_first_variable(model, shape_hint=False)
    result = freeze("inspect", model)
    assert result.exit_code == 3, result.output
    line = result.stderr.strip()
    assert line.startswith(f"error: {model}: TensorFlow cannot import the graph (") and \
        "1099511627776" in line and "\n" not in line and "{{" not in line, line
