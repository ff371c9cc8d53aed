"""Build one small CNN four ways, for naming its Keras layers on the command line (seeded; no
downloads): `--keep-float Conv1`, `--outputs Conv1`.

    python models/keras_layers.py OUT_DIR

Every model: input `image` [?, 8, 8, 3] -> `bn` (BatchNormalization) -> `Conv1` (3x3, 4
filters, relu) -> `conv2d` (3x3, 6 filters) -> `conv2d_1` (1x1, 5 filters, relu) -> flatten ->
`probs` (Dense 3, softmax). `conv2d` and `conv2d_1` are Keras' own default names, which Keras
3's frozen graphs scope as `conv2d_1/` and `conv2d_1_2/` (see graphfreeze.graph.layer_names). No
layer is one TFLite fuses into its neighbour's op (a batch norm after a conv), so each conv
keeps its own name.

OUT_DIR/
  keras3.keras         Keras 3
  tf_keras.h5          tf_keras
  tf_keras_savedmodel/ tf.saved_model.save of the tf_keras model
  keras3_savedmodel/   Keras 3's model.export
  filters.json         each conv layer's output channels (what tells them apart in a .tflite)
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FILTERS = {"Conv1": 4, "conv2d": 6, "conv2d_1": 5}  # each conv's output channels tell it apart


def cnn(k):
    image = k.Input((8, 8, 3), name="image")
    x = k.layers.BatchNormalization(name="bn")(image)
    x = k.layers.Conv2D(FILTERS["Conv1"], 3, activation="relu", name="Conv1")(x)
    x = k.layers.Conv2D(FILTERS["conv2d"], 3, name="conv2d")(x)
    x = k.layers.Conv2D(FILTERS["conv2d_1"], 1, activation="relu", name="conv2d_1")(x)
    x = k.layers.Flatten(name="flatten")(x)
    model = k.Model(image, k.layers.Dense(3, activation="softmax", name="probs")(x))
    rng = np.random.default_rng(0)  # seeded weights; batch-norm statistics not the identity
    for w in model.weights:
        name = getattr(w, "path", None) or w.name
        w.assign(rng.uniform(0.5, 1.5, w.shape) if "variance" in name else
                 rng.normal(0, 0.3, w.shape))
    return model


def main(out: str) -> None:
    import keras
    import tf_keras

    os.makedirs(out, exist_ok=True)
    tf.random.set_seed(0)
    keras3 = cnn(keras)
    keras3.save(os.path.join(out, "keras3.keras"))
    keras3.export(os.path.join(out, "keras3_savedmodel"), verbose=False)
    old = cnn(tf_keras)
    old.save(os.path.join(out, "tf_keras.h5"))
    tf.saved_model.save(old, os.path.join(out, "tf_keras_savedmodel"))
    with open(os.path.join(out, "filters.json"), "w") as f:
        json.dump(FILTERS, f)


if __name__ == "__main__":
    main(sys.argv[1])
