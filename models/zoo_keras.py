"""Zoo: Keras 3 image models (keras.applications with weights=None, small CNNs), saved as users
save them (`model.save("x.keras")`, `model.export(dir)`). Each builder writes into its folder
and returns its zoo.json entry (see zoo.py)."""

from __future__ import annotations

import os

IMAGE = 96
CNN_TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "edge-int8", "onnx"]

# zoo name -> (keras.applications constructor, input size, extra kwargs)
APPLICATIONS = {
    "mobilenet_v1": ("MobileNet", IMAGE, {}),
    "mobilenet_v2": ("MobileNetV2", IMAGE, {}),
    "mobilenet_v3_small": ("MobileNetV3Small", IMAGE, {}),
    "mobilenet_v3_large": ("MobileNetV3Large", IMAGE, {}),
    "efficientnet_b0": ("EfficientNetB0", IMAGE, {}),
    "efficientnet_v2_b0": ("EfficientNetV2B0", IMAGE, {}),
    "resnet50": ("ResNet50", IMAGE, {}),
    "resnet50_v2": ("ResNet50V2", IMAGE, {}),
    "densenet121": ("DenseNet121", IMAGE, {}),
    "nasnet_mobile": ("NASNetMobile", IMAGE, {}),
    "xception": ("Xception", IMAGE, {}),
    "inception_v3": ("InceptionV3", IMAGE, {}),
    "inception_resnet_v2": ("InceptionResNetV2", IMAGE, {}),
    "convnext_tiny": ("ConvNeXtTiny", IMAGE, {}),
}


def _seed():
    import keras

    keras.utils.set_random_seed(0)
    return keras


def _entry(path: str, shape, targets=None, dtype="float32", high=None, args=None, fmt="keras3"):
    spec = {"shape": [1, *shape], "dtype": dtype}
    if high is not None:
        spec["high"] = high
    return {"path": path, "args": list(args or []), "targets": list(targets or CNN_TARGETS),
            "kind": "savedmodel" if fmt == "saved_model" else "keras3",
            "peer": {"format": fmt, "inputs": [spec]}}


def application(name: str, out: str) -> dict:
    keras = _seed()
    ctor, size, kwargs = APPLICATIONS[name]
    model = getattr(keras.applications, ctor)(weights=None, input_shape=(size, size, 3),
                                              classes=10, **kwargs)
    model.save(os.path.join(out, "model.keras"))
    return _entry("model.keras", (size, size, 3))


def vgg16(out: str) -> dict:
    """VGG16's convolutional base with the Flatten + Dense head users put on it (the
    application's own 4096-wide head would make a 200 MB file at 96x96)."""
    keras = _seed()
    base = keras.applications.VGG16(weights=None, include_top=False, input_shape=(IMAGE, IMAGE, 3))
    x = keras.layers.Flatten(name="flatten")(base.output)
    x = keras.layers.Dense(64, activation="relu", name="fc1")(x)
    probs = keras.layers.Dense(10, activation="softmax", name="predictions")(x)
    keras.Model(base.input, probs, name="vgg16").save(os.path.join(out, "model.keras"))
    return _entry("model.keras", (IMAGE, IMAGE, 3))


def regnetx002(out: str) -> dict:
    """RegNetX002: Keras 3 has no RegNet, so users have it from tf_keras, saved as `.h5`."""
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    model = tf_keras.applications.RegNetX002(weights=None, input_shape=(IMAGE, IMAGE, 3),
                                             classes=10)
    model.save(os.path.join(out, "model.h5"), save_format="h5")
    entry = _entry("model.h5", (IMAGE, IMAGE, 3), fmt="tf_keras")
    entry["kind"] = "tf_keras"
    return entry


def efficientnet_b0_export(out: str) -> dict:
    """EfficientNetB0 exported by Keras 3 as a SavedModel (`model.export`)."""
    keras = _seed()
    model = keras.applications.EfficientNetB0(weights=None, input_shape=(IMAGE, IMAGE, 3),
                                              classes=10)
    model.export(os.path.join(out, "saved_model"), verbose=False)
    return _entry("saved_model", (IMAGE, IMAGE, 3), fmt="saved_model")


def cnn_flatten(out: str) -> dict:
    keras = _seed()
    inputs = keras.Input((28, 28, 1), name="image")
    x = keras.layers.Conv2D(8, 3, activation="relu")(inputs)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(16, 3, activation="relu")(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dropout(0.5)(x)
    probs = keras.layers.Dense(10, activation="softmax", name="probs")(x)
    keras.Model(inputs, probs).save(os.path.join(out, "model.keras"))
    return _entry("model.keras", (28, 28, 1))


def gan_generator(out: str) -> dict:
    keras = _seed()
    noise = keras.Input((16,), name="noise")
    x = keras.layers.Dense(7 * 7 * 16, use_bias=False)(noise)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.LeakyReLU(0.2)(x)
    x = keras.layers.Reshape((7, 7, 16))(x)
    x = keras.layers.Conv2DTranspose(16, 4, strides=2, padding="same")(x)
    x = keras.layers.LeakyReLU(0.2)(x)
    image = keras.layers.Conv2DTranspose(1, 4, strides=2, padding="same",
                                         activation="tanh", name="image")(x)
    keras.Model(noise, image).save(os.path.join(out, "model.keras"))
    return _entry("model.keras", (16,))


def ecg_conv1d(out: str) -> dict:
    keras = _seed()
    signal = keras.Input((128, 1), name="ecg")
    x = signal
    for filters in (8, 16):
        x = keras.layers.Conv1D(filters, 5, padding="same")(x)
        x = keras.layers.BatchNormalization()(x)
        x = keras.layers.ReLU()(x)
        x = keras.layers.MaxPooling1D(2)(x)
    x = keras.layers.Flatten()(x)
    probs = keras.layers.Dense(5, activation="softmax", name="probs")(x)
    keras.Model(signal, probs).save(os.path.join(out, "model.keras"))
    return _entry("model.keras", (128, 1))


def builders() -> dict:
    found = {name: (lambda out, n=name: application(n, out)) for name in APPLICATIONS}
    found.update(regnetx002=regnetx002, vgg16=vgg16, efficientnet_b0_export=efficientnet_b0_export,
                 cnn_flatten=cnn_flatten, gan_generator=gan_generator, ecg_conv1d=ecg_conv1d)
    return found
