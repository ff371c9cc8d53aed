"""Keras 3 models users ship (issue 14): recurrent layers with masking (their TensorLists are
handles constant folding leaves alone) as `.keras` and `model.export` SavedModels, and exported
gradient functions that wait for their arguments; each freezes and verifies."""

from __future__ import annotations

import json

import pytest


def _verified(out) -> dict:
    car = json.loads(out.with_name(out.name + ".json").read_text())
    assert car["verification"]["passed"], car["verification"]
    return car


@pytest.fixture(scope="module")
def keras3_models(tmp_path_factory):
    import keras
    from keras import layers

    root = tmp_path_factory.mktemp("keras3")
    keras.utils.set_random_seed(0)
    tokens = keras.Input((12,), dtype="int32", name="tokens")
    x = layers.Embedding(50, 8, mask_zero=True)(tokens)
    x = layers.Bidirectional(layers.LSTM(8))(x)
    keras.Model(tokens, layers.Dense(3, activation="softmax", name="probs")(x)).save(
        root / "bilstm.keras")
    digits = keras.Input((7, 12), name="digits")
    y = layers.RepeatVector(4)(layers.GRU(16)(digits))
    seq2seq = keras.Model(digits, layers.Dense(12, activation="softmax", name="chars")(
        layers.LSTM(16, return_sequences=True)(y)))
    seq2seq.save(root / "seq2seq.keras")
    seq2seq.export(str(root / "seq2seq_export"), verbose=False)
    image = keras.Input((8, 8, 3), name="image")
    silu = layers.Conv2D(4, 3, activation="silu")(image)  # its gradient: a custom_gradient fn
    keras.Model(image, layers.Dense(2)(layers.GlobalAveragePooling2D()(silu))).export(
        str(root / "silu_export"), verbose=False)
    return root


@pytest.mark.parametrize("name", ["bilstm.keras", "seq2seq.keras", "seq2seq_export",
                                  "silu_export"])
def test_keras3_model_freezes_and_verifies(keras3_models, freeze, tmp_path, name):
    result = freeze(keras3_models / name, "--target", "android,onnx", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    for suffix in (".pb", ".onnx"):
        _verified(next(tmp_path.glob(f"*{suffix}")))
