"""Held-out Keras models of issue 43, small and seeded, nothing downloaded: keras-hub
DeepLabV3ImageSegmenters built from keras-hub's own classes (a ResNet image encoder of tiny
widths) whose input size is unknown, declared by their preprocessor (as `from_preset` models
have), by their image encoder, or by nothing; Keras 3 models quantized by Keras itself
(`model.quantize("int8")`): attention of EinsumDense layers and Dense layers, which Keras loads
back, and a MultiHeadAttention, which it does not; a small Keras MobileNetV2 (its Conv1 fused with
its batch norm and ReLU6 into one op). Each builder returns its zoo.json entry (see
zoo.py).

    python models/keras_held_out.py OUT_DIR [--only NAME,NAME] [--list]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zoo  # noqa: E402

SIZE = 32  # the image size a model declares


def _entry(path: str, inputs: list[dict], targets: list[str], **extra) -> dict:
    return {"path": path, "args": [], "targets": list(targets), "kind": "keras3",
            "peer": {"format": "keras3", "inputs": inputs}, **extra}


def _deeplab(out: str, encoder_shape=(None, None, 3), image_size=None) -> dict:
    """A DeepLabV3ImageSegmenter (3 classes) on a bottleneck ResNet of tiny widths (keras-hub
    asks the first stack for 64 filters), its own input `(None, None, None, 3)` as keras-hub's
    default `image_shape`; saved as `model.keras`. Its bilinear UpSampling2D cannot run on an
    image of unknown size in a TensorFlow graph, Keras' own `model.export` included."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    encoder = keras_hub.models.ResNetBackbone(
        input_conv_filters=[8], input_conv_kernel_sizes=[3], stackwise_num_filters=[64, 8, 8],
        stackwise_num_blocks=[1, 1, 1], stackwise_num_strides=[1, 2, 2],
        block_type="bottleneck_block", use_pre_activation=False, image_shape=encoder_shape)
    backbone = keras_hub.models.DeepLabV3Backbone(
        image_encoder=encoder, low_level_feature_key="P2", spatial_pyramid_pooling_key="P4",
        upsampling_size=4, dilation_rates=[1, 2], projection_filters=8)
    preprocessor = None if image_size is None else \
        keras_hub.models.DeepLabV3ImageSegmenterPreprocessor(
            image_converter=keras_hub.layers.DeepLabV3ImageConverter(image_size=image_size,
                                                                     scale=1 / 255))
    model = keras_hub.models.DeepLabV3ImageSegmenter(backbone=backbone, num_classes=3,
                                                     preprocessor=preprocessor)
    model.save(os.path.join(out, "model.keras"))
    return _entry("model.keras", [{"shape": [1, SIZE, SIZE, 3], "dtype": "float32"}],
                  ["android", "tflite", "edge-int8", "onnx", "openvino"])


def deeplab_preprocessed(out: str) -> dict:
    """The size is its preprocessor's: images resized to 32x32 (`image_converter.image_size`)."""
    return _deeplab(out, image_size=(SIZE, SIZE))


def deeplab_encoder_sized(out: str) -> dict:
    """The size is its image encoder's: a ResNetBackbone built with `image_shape=(32, 32, 3)`."""
    return _deeplab(out, encoder_shape=(SIZE, SIZE, 3))


def deeplab_unsized(out: str) -> dict:
    """No size declared anywhere: nothing can trace it into a graph (a refusal naming why)."""
    entry = _deeplab(out)
    entry["targets"] = []
    return entry


def _quantized(out: str, attention) -> dict:
    """tokens (8, 16) -> self-attention (`attention(x)`) -> residual, LayerNormalization, mean
    -> Dense(16, relu) -> Dense(4, softmax) `probs`, quantized with `model.quantize("int8")`
    (its Dense and EinsumDense kernels int8, per output channel) and saved as `model.keras`."""
    import warnings

    import keras

    keras.utils.set_random_seed(0)
    tokens = keras.Input((8, 16), name="tokens")
    x = keras.layers.LayerNormalization()(attention(keras, tokens) + tokens)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(16, activation="relu")(x)
    model = keras.Model(tokens, keras.layers.Dense(4, activation="softmax", name="probs")(x))
    with warnings.catch_warnings():  # "Layer X does not have a `quantize` method"
        warnings.simplefilter("ignore")
        model.quantize("int8")
    model.save(os.path.join(out, "model.keras"))
    return _entry("model.keras", [{"shape": [2, 8, 16], "dtype": "float32"}],
                  ["android", "tflite", "tflite-dynamic", "edge-int8", "onnx", "onnx-int8",
                   "openvino"])


def _einsum_attention(keras, x):
    """Single-head-per-slice attention built from three EinsumDense projections (2 heads of 8,
    as a MultiHeadAttention's) and keras.layers.Attention."""
    heads = [keras.layers.Reshape((8, 16))(keras.layers.EinsumDense(
        "btd,dhk->bthk", (None, 2, 8), bias_axes="hk", name=name)(x))
        for name in ("query", "value", "key")]
    return keras.layers.Attention()(heads)


def quantized_attention(out: str) -> dict:
    """EinsumDense attention and Dense layers quantized by Keras: Keras loads it back."""
    return _quantized(out, _einsum_attention)


def quantized_mha(out: str) -> dict:
    """A MultiHeadAttention quantized by Keras: its config keeps float32 while its EinsumDense
    sublayers hold int8 kernels, so keras.saving.load_model cannot load it back."""
    entry = _quantized(out, lambda keras, x: keras.layers.MultiHeadAttention(
        num_heads=2, key_dim=8, name="mha")(x, x))
    return {**entry, "targets": [], "reloads": False}


def mobilenet_v2(out: str) -> dict:
    """keras.applications.MobileNetV2 (alpha 0.35, 32x32, 4 classes, no weights)."""
    import keras

    keras.utils.set_random_seed(0)
    keras.applications.MobileNetV2(weights=None, alpha=0.35, input_shape=(SIZE, SIZE, 3),
                                   classes=4).save(os.path.join(out, "model.keras"))
    return _entry("model.keras", [{"shape": [1, SIZE, SIZE, 3], "dtype": "float32"}],
                  ["android", "tflite", "edge-int8", "onnx", "openvino"])


SUBCLASSED = '''"""A subclassed Keras model (no symbolic inputs), registered for load_model."""
import keras


@keras.saving.register_keras_serializable(package="held_out")
class Doubler(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(4)

    def call(self, x):
        return self.dense(x) * 2.0
'''


def subclassed(out: str) -> dict:
    """A subclassed keras.Model (a Dense, doubled) saved as .keras, its class in subclassed.py
    beside it (--custom-objects): it has no `.inputs` to trace it at."""
    import numpy as np

    with open(os.path.join(out, "subclassed.py"), "w") as f:
        f.write(SUBCLASSED)
    sys.path.insert(0, out)
    from subclassed import Doubler

    model = Doubler()
    model(np.zeros((1, 8), np.float32))
    model.save(os.path.join(out, "model.keras"))
    return {**_entry("model.keras", [{"shape": [1, 8], "dtype": "float32"}], []),
            "args": ["--custom-objects", "subclassed:Doubler"]}


def builders() -> dict:
    return {f.__name__: f for f in (deeplab_preprocessed, deeplab_encoder_sized, deeplab_unsized,
                                    quantized_attention, quantized_mha, mobilenet_v2,
                                    subclassed)}


if __name__ == "__main__":
    sys.exit(zoo.main(modules=(sys.modules[__name__],), doc=__doc__))
