"""A Keras layer's name where a node is named (`--outputs`, `--inputs`): the layer's output,
whichever Keras named its ops (models/keras_layers.py: Keras 3, tf_keras, a SavedModel of each;
a TF1 graph of tf.keras layers), through the real `freeze` CLI in the models' folder."""

from __future__ import annotations

import json

import pytest

MODELS = ["keras3.keras", "tf_keras.h5", "tf_keras_savedmodel", "keras3_savedmodel"]


def _frozen(freeze, model, out, *args) -> dict:
    result = freeze(model, *args, "-o", out)
    assert result.exit_code == 0, result.output
    car = json.loads(out.with_name(out.name + ".json").read_text())
    assert car["verification"]["passed"], car["verification"]
    return car


@pytest.mark.parametrize("model", MODELS)
def test_outputs_names_a_keras_layer(keras_layers, freeze, monkeypatch, tmp_path, model):
    monkeypatch.chdir(keras_layers)
    filters = json.loads((keras_layers / "filters.json").read_text())
    car = _frozen(freeze, model, tmp_path / "conv1.pb", "--outputs", "Conv1")
    (output,) = car["outputs"]
    assert "Conv1" in output["name"] and output["shape"] == [None, 6, 6, filters["Conv1"]]
    if model.startswith("keras3"):  # Keras 3 scopes conv2d_1's ops conv2d_1_2/, conv2d's conv2d_1/
        car = _frozen(freeze, model, tmp_path / "two.pb", "--outputs", "conv2d_1,conv2d")
        assert [o["shape"][-1] for o in car["outputs"]] == [filters["conv2d_1"],
                                                            filters["conv2d"]]


def test_inputs_names_a_keras_layer(keras_layers, freeze, monkeypatch, tmp_path):
    """The layer's output is fed: the graph cut there."""
    monkeypatch.chdir(keras_layers)
    car = _frozen(freeze, "tf_keras.h5", tmp_path / "cut.pb", "--inputs", "Conv1", "--outputs",
                  "probs")
    (given,) = car["inputs"]
    assert given["name"] == "model/Conv1/Relu:0" and given["shape"] == [None, 6, 6, 4]


def test_a_keras_layer_in_a_tf1_graph(samples, freeze, monkeypatch, tmp_path):
    """cnn_v1: tf.keras layers in a TF1 graph, with the optimizer's and saver's ops beside them."""
    monkeypatch.chdir(samples)
    car = _frozen(freeze, "cnn_v1", tmp_path / "dense.pb", "--outputs", "dense")
    assert [o["name"] for o in car["outputs"]] == ["sequential/dense/BiasAdd:0"]


def test_a_scope_with_several_outputs_is_one_line(tmp_path):
    import tensorflow as tf
    from graphfreeze import names
    from graphfreeze.errors import InputError

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
        with tf.name_scope("block"):
            a, b = tf.multiply(x, 2.0, name="double"), tf.add(x, 1.0, name="inc")
        tf.add(a, b, name="out")
    with pytest.raises(InputError, match=r"^output 'block': layer 'block' in m.pb gives 2 tensors "
                                         r"\(block/double:0, block/inc:0\); name one of them$"):
        names.resolve(graph.as_graph_def(), ["block"], "output", "m.pb")
    refs = names.resolve(graph.as_graph_def(), ["block/inc", "out"], "output", "m.pb")
    assert [r.name for r in refs] == ["block/inc:0", "out:0"]  # node names as before
