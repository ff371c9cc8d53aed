"""Zoo: tf_keras models (`.keras` and `.h5` written by tf_keras) and tensorflow-model-optimization
models (QAT whole-model, annotated and custom-config; pruned; clustered; cluster-preserving QAT)
saved as tf_keras `.h5` after a training step. `DenseQuantizeConfig` is importable as
`zoo_tfmot:DenseQuantizeConfig` (put models/ on PYTHONPATH) for `--custom-objects`."""

from __future__ import annotations

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from zoo_keras import CNN_TARGETS  # noqa: E402

SHAPE = (28, 28, 1)


def _tfmot():
    import tensorflow_model_optimization as tfmot

    return tfmot


def _keras():
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    return tf_keras


def _cnn(dense_config=None):
    """Conv/BatchNorm/ReLU/MaxPool, Conv, Flatten, Dense: what tfmot's guides quantize."""
    k = _keras()
    image = k.Input(SHAPE, name="image")
    x = k.layers.Conv2D(8, 3, use_bias=False)(image)
    x = k.layers.BatchNormalization()(x)
    x = k.layers.ReLU()(x)
    x = k.layers.MaxPooling2D()(x)
    x = k.layers.Conv2D(16, 3, activation="relu")(x)
    x = k.layers.MaxPooling2D()(x)
    x = k.layers.Flatten()(x)
    dense = k.layers.Dense(10, activation="softmax", name="probs")
    if dense_config is not None:
        dense = _tfmot().quantization.keras.quantize_annotate_layer(dense, dense_config)
    return k.Model(image, dense(x))


def _train(model, callbacks=(), epochs=1):
    """One short epoch on seeded random data, so ranges and masks are learned, not initial."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random((64, *SHAPE), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=16, epochs=epochs, verbose=0, callbacks=list(callbacks))
    return model


def _entry(path, fmt="tf_keras", kind="tfmot", args=(), qat=False, custom=None):
    peer = {"format": fmt, "inputs": [{"shape": [1, *SHAPE], "dtype": "float32"}]}
    if qat:
        peer["qat"] = True
    if custom:
        peer["custom_objects"] = custom
    return {"path": path, "args": list(args), "targets": list(CNN_TARGETS), "kind": kind,
            "peer": peer}


def _save(model, out: str, name: str) -> None:
    model.save(os.path.join(out, name), **({"save_format": "h5"} if name.endswith(".h5") else {}))


def tfkeras_cnn_keras(out: str) -> dict:
    _save(_cnn(), out, "model.keras")
    return _entry("model.keras", kind="tf_keras")


def tfkeras_cnn_h5(out: str) -> dict:
    _save(_train(_cnn()), out, "model.h5")
    return _entry("model.h5", kind="tf_keras")


def qat_cnn(out: str) -> dict:
    _save(_train(_tfmot().quantization.keras.quantize_model(_cnn())), out, "model.h5")
    return _entry("model.h5", qat=True)


def qat_annotated(out: str) -> dict:
    """quantize_annotate_layer on the convolutions only, then quantize_apply."""
    tfmot = _tfmot()
    qk = tfmot.quantization.keras

    def annotate(layer):
        return qk.quantize_annotate_layer(layer) if "conv2d" in layer.name else layer

    k = _keras()
    annotated = k.models.clone_model(_cnn(), clone_function=annotate)
    _save(_train(qk.quantize_apply(annotated)), out, "model.h5")
    return _entry("model.h5", qat=True)


def _quantize_config_class():
    qk = _tfmot().quantization.keras

    class DenseQuantizeConfig(qk.QuantizeConfig):
        """A user's QuantizeConfig for Dense: 8-bit kernel and activation."""

        def get_weights_and_quantizers(self, layer):
            return [(layer.kernel, qk.quantizers.LastValueQuantizer(
                num_bits=8, symmetric=True, narrow_range=False, per_axis=False))]

        def get_activations_and_quantizers(self, layer):
            return [(layer.activation, qk.quantizers.MovingAverageQuantizer(
                num_bits=8, symmetric=False, narrow_range=False, per_axis=False))]

        def set_quantize_weights(self, layer, quantize_weights):
            layer.kernel = quantize_weights[0]

        def set_quantize_activations(self, layer, quantize_activations):
            layer.activation = quantize_activations[0]

        def get_output_quantizers(self, layer):
            return []

        def get_config(self):
            return {}

    return DenseQuantizeConfig


def __getattr__(name: str):
    """zoo_tfmot:DenseQuantizeConfig for --custom-objects, made on first use (importing this
    module stays free of TensorFlow)."""
    if name == "DenseQuantizeConfig":
        globals()[name] = _quantize_config_class()
        return globals()[name]
    raise AttributeError(name)


def qat_custom(out: str) -> dict:
    qk = _tfmot().quantization.keras
    config = __getattr__("DenseQuantizeConfig")
    annotated = qk.quantize_annotate_model(_cnn(config()))
    with qk.quantize_scope({"DenseQuantizeConfig": config}):
        model = _train(qk.quantize_apply(annotated))
    _save(model, out, "model.h5")
    custom = "zoo_tfmot:DenseQuantizeConfig"
    return _entry("model.h5", args=["--custom-objects", custom], qat=True, custom=custom)


def pruned_cnn(out: str) -> dict:
    """Pruned to 50 % sparsity during a training epoch, stripped for export (tfmot's guide)."""
    sparsity = _tfmot().sparsity.keras
    model = sparsity.prune_low_magnitude(
        _cnn(), pruning_schedule=sparsity.ConstantSparsity(0.5, begin_step=0, frequency=1))
    _train(model, callbacks=[sparsity.UpdatePruningStep()])
    _save(sparsity.strip_pruning(model), out, "model.h5")
    return _entry("model.h5")


def _clustered():
    clustering = _tfmot().clustering.keras
    model = clustering.cluster_weights(
        _cnn(), number_of_clusters=8,
        cluster_centroids_init=clustering.CentroidInitialization.LINEAR)
    return clustering.strip_clustering(_train(model))


def clustered_cnn(out: str) -> dict:
    """Weights clustered to 8 centroids per kernel, stripped for export."""
    _save(_clustered(), out, "model.h5")
    return _entry("model.h5")


def cqat_cnn(out: str) -> dict:
    """Cluster-preserving QAT on the clustered model (tfmot's collaborative optimization)."""
    tfmot = _tfmot()
    qk = tfmot.quantization.keras
    model = qk.quantize_apply(qk.quantize_annotate_model(_clustered()),
                              tfmot.experimental.combine.Default8BitClusterPreserveQuantizeScheme())
    _save(_train(model), out, "model.h5")
    entry = _entry("model.h5", qat=True)
    # tfmot 0.8 cannot load it back either (tf_keras rebuilds the layers with the default 8-bit
    # scheme: "Weight count mismatch for layer #1 ... expects 4 weight(s). Received 7"), with
    # or without the cluster-preserve quantizers in quantize_scope.
    entry["reloads"] = False
    return entry


def builders() -> dict:
    return dict(tfkeras_cnn_keras=tfkeras_cnn_keras, tfkeras_cnn_h5=tfkeras_cnn_h5,
                qat_cnn=qat_cnn, qat_annotated=qat_annotated, qat_custom=qat_custom,
                pruned_cnn=pruned_cnn, clustered_cnn=clustered_cnn, cqat_cnn=cqat_cnn)
