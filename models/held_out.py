"""Held-out inputs of issue 43 that were internal errors, small and seeded, nothing downloaded: a
SavedModel of a pure concrete function (no variables; a bare function and a tf.Module's; one
with constant outputs), the simple while loop of tf2onnx's loop tests (a TF1 graph: frozen .pb
and SavedModel), a RetinaNet-style detector with TFLite's post-processing composite and a
`[1, ?, ?, 3]` image input, and a Keras 3 CNN trained under the `mixed_float16` policy. Each
builder returns its zoo.json entry (see zoo.py).

    python models/held_out.py OUT_DIR [--only NAME,NAME] [--list]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zoo  # noqa: E402

TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "onnx", "openvino"]
MIXED_TARGETS = ["android", "tflite", "tflite-fp16", "edge-int8", "onnx", "openvino"]


def _entry(path: str, inputs: list[dict], targets=TARGETS, fmt="saved_model", kind="savedmodel",
           **extra) -> dict:
    return {"path": path, "args": [], "targets": list(targets), "kind": kind,
            "peer": {"format": fmt, "inputs": inputs}, **extra}


def _affine(tf, x):
    return tf.nn.relu(x * 2.0 + 1.0) - tf.reduce_mean(x, axis=-1, keepdims=True)


def pure_function(out: str) -> dict:
    """`tf.saved_model.save(module, path, signatures=concrete_fn)` of a tf.function that holds
    no variable (the module saved has none either), one of its inputs a scalar."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x"),
                                  tf.TensorSpec([], tf.float32, name="scale")])
    def affine(x, scale):
        return _affine(tf, x) * scale

    tf.saved_model.save(tf.Module(), os.path.join(out, "saved_model"),
                        signatures=affine.get_concrete_function())
    return _entry("saved_model", [{"name": "x", "shape": [2, 4], "dtype": "float32"},
                                  {"name": "scale", "shape": [], "dtype": "float32"}])


def pure_module(out: str) -> dict:
    """A tf.Module whose serving function reads no variable."""
    import tensorflow as tf

    class Affine(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            return {"y": _affine(tf, x)}

    module = Affine()
    tf.saved_model.save(module, os.path.join(out, "saved_model"), signatures=module.serve)
    return _entry("saved_model", [{"name": "x", "shape": [2, 4], "dtype": "float32"}])


def constant_outputs(out: str) -> dict:
    """A pure function that also returns constants (a detector's anchors, its class count):
    outputs no input reaches, folded to Const nodes."""
    import numpy as np
    import tensorflow as tf

    anchors = np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(2, 4)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def serve(x):
        return {"y": _affine(tf, x), "anchors": tf.constant(anchors) * 2.0,
                "classes": tf.range(3.0)}

    tf.saved_model.save(tf.Module(), os.path.join(out, "saved_model"),
                        signatures=serve.get_concrete_function())
    return _entry("saved_model", [{"name": "x", "shape": [2, 4], "dtype": "float32"}])


def _simple_while(tf):
    """tf2onnx's tests/test_loops.py `test_simple_while_loop`: a scalar int32 `input_1` counted
    up to 10 by a v1 while loop, `output` its result."""
    i = tf.compat.v1.placeholder(tf.int32, (), name="input_1")
    r = tf.while_loop(lambda i: tf.less(i, 10), lambda i: tf.add(i, 1), [i])
    return i, tf.identity(r, name="output")


def simple_while_pb(out: str, v1: bool = False) -> dict:
    """The loop as a frozen GraphDef (`simple_while.pb`): a `StatelessWhile` as TF2 writes it,
    or with `v1` the Enter/Merge/Switch/Exit loop TF1 wrote."""
    import tensorflow as tf
    from tensorflow.python.ops import control_flow_util

    was = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = not v1
    try:
        with tf.Graph().as_default() as graph:
            _simple_while(tf)
            tf.io.write_graph(graph.as_graph_def(), out, "simple_while.pb", as_text=False)
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = was
    return _entry("simple_while.pb", [{"name": "input_1", "shape": [], "dtype": "int32"}],
                  fmt="frozen", kind="tf1", args=["--outputs", "output"],
                  reloads=False)  # zoo.check reads no frozen graph: TensorFlow wrote it


def simple_while_v1_pb(out: str) -> dict:
    """The loop in TF1's own control flow ops, as tf2onnx's TF1 tests build it."""
    return simple_while_pb(out, v1=True)


def simple_while_saved_model(out: str) -> dict:
    """The loop as a TF1 SavedModel (simple_save: signature `serving_default`, input `input_1`,
    output `output`)."""
    import tensorflow as tf

    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        i, r = _simple_while(tf)
        tf.compat.v1.saved_model.simple_save(sess, os.path.join(out, "saved_model"),
                                             {"input_1": i}, {"output": r})
    return _entry("saved_model", [{"name": "input_1", "shape": [], "dtype": "int32"}])


def detector_dynamic_image(out: str) -> dict:
    """The second zoo's RetinaNet-style detector with TFLite's post-processing composite, its
    image input `[1, None, None, 3]` (as Model Garden exports with `input_image_size` unset);
    its anchors still an 8x8 grid, so it runs on 32x32 images."""
    import families_detectors as detectors

    head = detectors._head([1, None, None, 3])(  # noqa: SLF001
        lambda tf, boxes, scores, anchors: detectors._tflite_head(  # noqa: SLF001
            tf, boxes, scores, anchors))
    entry = detectors._save(out, head, detectors.TFLITE_TARGETS)  # noqa: SLF001
    entry["peer"]["inputs"] = [{"shape": detectors.IMAGE, "dtype": "float32"}]
    return entry


def mixed_precision_cnn(out: str) -> dict:
    """A small Keras 3 CNN built and trained a few steps under `mixed_float16` (Conv2D,
    DepthwiseConv2D, MaxPool, Dense, ReLU computing in float16 with float32 variables), its last
    layer in float32 as Keras recommends; saved as `model.keras`."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        inputs = keras.Input((16, 16, 3), name="image")
        x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
        x = keras.layers.DepthwiseConv2D(3, padding="same")(x)
        x = keras.layers.ReLU()(x)
        x = keras.layers.MaxPooling2D()(x)
        x = keras.layers.Flatten()(x)
        x = keras.layers.Dense(16, activation="relu")(x)
        x = keras.layers.Dense(4)(x)
        outputs = keras.layers.Activation("softmax", dtype="float32", name="probs")(x)
        model = keras.Model(inputs, outputs)
        model.compile("adam", "sparse_categorical_crossentropy")
        rng = np.random.default_rng(0)
        model.fit(rng.uniform(0, 1, (32, 16, 16, 3)).astype(np.float32),
                  rng.integers(0, 4, 32), epochs=1, batch_size=8, verbose=0)
        model.save(os.path.join(out, "model.keras"))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return _entry("model.keras", [{"shape": [1, 16, 16, 3], "dtype": "float32"}],
                  targets=MIXED_TARGETS, fmt="keras3", kind="keras3")


def builders() -> dict:
    return {f.__name__: f for f in (pure_function, pure_module, constant_outputs,
                                    simple_while_pb, simple_while_v1_pb, simple_while_saved_model,
                                    detector_dynamic_image, mixed_precision_cnn)}


if __name__ == "__main__":
    sys.exit(zoo.main(modules=(sys.modules[__name__],), doc=__doc__))
