"""Zoo: vision-transformer-style tf_keras models whose layers call TensorFlow ops directly
(`tf.compat.v1.transpose`, `tf.compat.v1.shape`, `tf.matmul` on Keras tensors become TFOpLambda
layers, as keras-cv-attention-models' MobileViT, Swin, CoAtNet... save them), saved as `.h5`
and `.keras`.

    python models/zoo_vision.py refused OUT_DIR

writes OUT_DIR/print.h5 and OUT_DIR/write.keras: the same kind of model with a TFOpLambda
calling `tf.print` / `tf.io.write_file`, which freeze must refuse."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from zoo_keras import CNN_TARGETS  # noqa: E402

SHAPE = (16, 16, 3)
TARGETS = [t for t in CNN_TARGETS if t != "edge-int8"]


def _attention(hook=None):
    """Patch embedding, one self-attention block over tokens, mean-pooled Dense head; `hook`
    (a TF function) is called on the tokens and its result fed on."""
    import tensorflow as tf
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    image = tf_keras.Input(SHAPE, name="image")
    x = tf_keras.layers.Conv2D(8, 4, strides=4, name="patches")(image)  # (4, 4, 8)
    size = tf.compat.v1.shape(x)  # TFOpLambda compat.v1.shape
    tokens = tf.reshape(x, [size[0], size[1] * size[2], 8])  # (16, 8)
    if hook is not None:
        tokens = hook(tokens)
    q = tf_keras.layers.Dense(8, name="q")(tokens)
    k = tf_keras.layers.Dense(8, name="k")(tokens)
    v = tf_keras.layers.Dense(8, name="v")(tokens)
    scores = tf.matmul(q, tf.compat.v1.transpose(k, [0, 2, 1])) / 8 ** 0.5  # TFOpLambda
    mixed = tf.matmul(tf.nn.softmax(scores), v)
    pooled = tf_keras.layers.GlobalAveragePooling1D()(mixed + tokens)
    return tf_keras.Model(image, tf_keras.layers.Dense(10, name="logits")(pooled))


def _entry(path: str) -> dict:
    return {"path": path, "args": [], "targets": TARGETS, "kind": "tf_keras",
            "peer": {"format": "tf_keras", "inputs": [{"shape": [1, *SHAPE],
                                                       "dtype": "float32"}]}}


def tfop_vit_h5(out: str) -> dict:
    _attention().save(os.path.join(out, "model.h5"))
    return _entry("model.h5")


def tfop_vit_keras(out: str) -> dict:
    _attention().save(os.path.join(out, "model.keras"))
    return _entry("model.keras")


def refused(out: str) -> None:
    """print.h5 and write.keras: the model with its `tf.identity` TFOpLambda turned into
    `tf.print` / `tf.io.write_file` in the saved config (Keras cannot build those layers
    itself: their result is an op, not a tensor)."""
    import json
    import zipfile

    import h5py
    import tensorflow as tf

    def retarget(config: str, function: str) -> str:
        config = json.loads(config)
        for layer in config["config"]["layers"]:
            if layer["class_name"] == "TFOpLambda" and layer["config"]["function"] == "identity":
                layer["config"]["function"] = function
        return json.dumps(config)

    os.makedirs(out, exist_ok=True)
    h5 = os.path.join(out, "print.h5")
    _attention(tf.identity).save(h5)
    with h5py.File(h5, "r+") as f:
        f.attrs["model_config"] = retarget(f.attrs["model_config"], "print")
    plain, keras = os.path.join(out, "plain.keras"), os.path.join(out, "write.keras")
    _attention(tf.identity).save(plain)
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(keras, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "config.json":
                data = retarget(data, "io.write_file").encode()
            dst.writestr(item, data)
    os.remove(plain)


def large_outputs(out: str) -> dict:
    """A LeViT-like head whose outputs are ~10-1000 in magnitude (Conv, BatchNorm with learned
    statistics, attention, Dense scaled up): float32 rounding alone differs by more than 1e-5
    between the original and any conversion (one ulp of 1000 is 6e-5). A SavedModel."""
    import numpy as np
    import tensorflow as tf
    import tf_keras

    model = _attention()
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if isinstance(layer, tf_keras.layers.Dense):
            w, b = layer.get_weights()
            layer.set_weights([w * 3, b + rng.uniform(-300, 300, b.shape).astype(np.float32)])
    scaled = tf_keras.Sequential([tf_keras.Input(SHAPE, name="image"),
                                  tf_keras.layers.Conv2D(3, 3, padding="same", name="stem"),
                                  tf_keras.layers.BatchNormalization(name="bn"), model])
    bn = scaled.get_layer("bn")
    gamma, beta, mean, var = bn.get_weights()
    bn.set_weights([gamma * 3, beta + 1, mean + 0.3, var * 0.2])
    tf.saved_model.save(scaled, os.path.join(out, "saved_model"))
    return {"path": "saved_model", "args": [], "targets": TARGETS, "kind": "savedmodel",
            "peer": {"format": "saved_model", "inputs": [{"shape": [1, *SHAPE],
                                                          "dtype": "float32"}]}}


def detector_head(out: str) -> dict:
    """A YOLOv8-like head: two feature levels, each Reshape'd to (batch, -1, C) and
    concatenated on the anchors axis. TFLite's converter fixes the batch at 1 and folds it into
    the Reshape, so at batch 2 its output is (1, 2N, C), not (2, N, C)."""
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    image = tf_keras.Input(SHAPE, name="image")
    p3 = tf_keras.layers.Conv2D(6, 3, strides=2, padding="same", name="p3")(image)  # (8, 8, 6)
    p4 = tf_keras.layers.Conv2D(6, 3, strides=2, padding="same", name="p4")(p3)  # (4, 4, 6)
    levels = [tf_keras.layers.Reshape((-1, 6), name=f"flat{k}")(p) for k, p in ((3, p3), (4, p4))]
    boxes = tf_keras.layers.Concatenate(axis=1, name="boxes")(levels)  # (80, 6)
    tf_keras.Model(image, boxes).save(os.path.join(out, "model.h5"))
    return _entry("model.h5")


def builders() -> dict:
    return {"tfop_vit_h5": tfop_vit_h5, "tfop_vit_keras": tfop_vit_keras,
            "large_outputs": large_outputs, "detector_head": detector_head}


if __name__ == "__main__":
    if sys.argv[1:2] != ["refused"] or len(sys.argv) != 3:
        sys.exit(__doc__)
    refused(sys.argv[2])
