"""`--keep-float LAYER`: a Keras layer's name, as the user named it, keeps that layer's ops in
float, whichever way its model was saved (models/keras_layers.py: Keras 3, tf_keras, and a
SavedModel of each), through the real `freeze` CLI in the models' folder."""

from __future__ import annotations

import json

import numpy as np
import pytest

MODELS = ["keras3.keras", "tf_keras.h5", "tf_keras_savedmodel", "keras3_savedmodel"]


@pytest.fixture(scope="module")
def filters(keras_layers) -> dict[str, int]:
    """Each conv layer's output channels."""
    return json.loads((keras_layers / "filters.json").read_text())


def float_convs(freeze, folder, model: str, keep: str) -> tuple[list[int], list[str]]:
    """Freeze `model` for edge-int8 keeping `keep` in float: (the output channels of each
    CONV_2D left in float, in order; the tensors the sidecar says were kept)."""
    from ai_edge_litert.interpreter import Interpreter

    out = folder / "out" / keep / f"{model.split('.')[0]}.tflite"
    result = freeze(model, "--target", "edge-int8", "--keep-float", keep, "-o", out)
    assert result.exit_code == 0, result.output
    interp = Interpreter(model_path=str(out))
    tensors = {t["index"]: t for t in interp.get_tensor_details()}
    convs = [tensors[int(op["outputs"][0])] for op in interp._get_ops_details()
             if op["op_name"] == "CONV_2D"]
    assert len(convs) == 3
    kept = json.loads(out.with_name(out.name + ".json").read_text())["keep_float"]
    return [int(t["shape"][-1]) for t in convs if t["dtype"] == np.float32], kept


@pytest.mark.parametrize("model", MODELS)
def test_a_keras_layer_name_keeps_that_layer_in_float(keras_layers, filters, freeze, monkeypatch,
                                                      model):
    monkeypatch.chdir(keras_layers)
    channels, kept = float_convs(freeze, keras_layers, model, "Conv1")
    assert channels == [filters["Conv1"]]
    assert len(kept) == 1 and "Conv1" in kept[0]  # the fused op's own tensor names


@pytest.mark.parametrize("model", ["keras3.keras", "keras3_savedmodel", "tf_keras.h5"])
def test_keras_default_names_are_the_layers_they_name(keras_layers, filters, freeze, monkeypatch,
                                                      model):
    """Keras 3 scopes layer `conv2d`'s ops `conv2d_1/` and layer `conv2d_1`'s `conv2d_1_2/`;
    `conv2d` is a layer before it is an op type (CONV_2D, spelled as TFLite does, is all)."""
    monkeypatch.chdir(keras_layers)
    for keep in ("conv2d_1", "conv2d"):
        assert float_convs(freeze, keras_layers, model, keep)[0] == [filters[keep]], keep
    every = float_convs(freeze, keras_layers, model, "CONV_2D")
    assert sorted(every[0]) == sorted(filters.values()) and every[1] == ["CONV_2D"]


def test_a_name_that_is_no_layer_is_one_line(keras_layers, freeze, monkeypatch):
    monkeypatch.chdir(keras_layers)
    result = freeze("keras3.keras", "--target", "edge-int8", "--keep-float", "Conv9", "-o",
                    keras_layers / "none" / "m.tflite")
    assert result.exit_code == 3
    assert result.output.strip().splitlines()[-1].startswith(
        "error: keras3.keras: --keep-float Conv9 matches no layer of the quantized model; ")
    assert not (keras_layers / "none").exists()
