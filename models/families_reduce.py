"""Models that fail one converter at one op deep inside (issue 26, `freeze reduce`): a small
TF1 CNN (tests) and ResNet50 (bench/bench_reduce.py) with an op injected between two stages,
saved as checkpoints; and a graph whose verification fails only sometimes (a random op)."""

from __future__ import annotations

import os

FIXTURES_ONLY = True  # made to fail: tests and benches of freeze reduce, not the coverage run

# op -> (what it computes on a tensor x, the converter that has no rule for it)
INJECTED = {
    "erfinv": (lambda tf, x: x + 1e-3 * tf.math.erfinv(0.5 * tf.math.tanh(x)), "tflite"),
    "lgamma": (lambda tf, x: x + 1e-3 * tf.math.lgamma(tf.nn.relu(x) + 1.0), "onnx"),
    "digamma": (lambda tf, x: x + 1e-3 * tf.math.digamma(tf.nn.relu(x) + 1.0), "openvino"),
    # TFLite's SOFTPLUS overflows to inf where TensorFlow's does not: a divergence
    "softplus": (lambda tf, x: x + 1e-3 * tf.math.softplus(100.0 * x), "tflite"),
}


def _save(v1, out: str) -> None:
    saver = v1.train.Saver()
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        saver.save(sess, os.path.join(out, "model.ckpt"))


def _entry(target: str) -> dict:
    return {"path": "model.ckpt", "args": ["--outputs", "probs"], "targets": [target],
            "kind": "tf1", "peer": {"format": "checkpoint", "outputs": ["probs"],
                                    "inputs": [{"name": "x", "shape": [1, 16, 16, 3]}]}}


def small_cnn(out: str, op: str) -> dict:
    """x [N,16,16,3] -> 4 conv+relu layers, `op` after the second -> mean -> dense -> probs."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        x = v1.placeholder(tf.float32, [None, 16, 16, 3], name="x")
        h = x
        for i in range(4):
            w = v1.get_variable(f"conv{i}/w", [3, 3, h.shape[-1], 8],
                                initializer=v1.glorot_uniform_initializer())
            h = tf.nn.relu(tf.nn.conv2d(h, w, 1, "SAME", name=f"conv{i}/Conv2D"))
            if i == 1:
                with tf.name_scope("injected"):
                    h = INJECTED[op][0](tf, h)
        h = tf.reduce_mean(h, axis=[1, 2])
        w = v1.get_variable("dense/w", [8, 10])
        tf.nn.softmax(tf.matmul(h, w), name="probs")
        _save(v1, out)
    return _entry(INJECTED[op][1])


def resnet50(out: str, op: str) -> str:
    """ResNet50 (tf_keras, weights=None, 224x224, 1000 classes) with `op` between the conv3 and
    conv4 stages, as a checkpoint; the prefix. Output `probs`, input `input`."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf
    import tf_keras
    from tf_keras.src.applications import resnet

    v1 = tf.compat.v1
    v1.disable_eager_execution()

    def stacks(x):
        x = resnet.stack1(x, 64, 3, stride1=1, name="conv2")
        x = resnet.stack1(x, 128, 4, name="conv3")
        x = tf_keras.layers.Lambda(lambda t: INJECTED[op][0](tf, t), name="injected")(x)
        x = resnet.stack1(x, 256, 6, name="conv4")
        return resnet.stack1(x, 512, 3, name="conv5")

    graph = tf.Graph()
    with graph.as_default():
        tf_keras.utils.set_random_seed(0)
        x = v1.placeholder(tf.float32, [None, 224, 224, 3], name="input")
        model = resnet.ResNet(stacks, False, True, "resnet50", True, None, x, None, None, 1000)
        tf.identity(model.output, name="probs")
        os.makedirs(out, exist_ok=True)
        _save(v1, out)
    return os.path.join(out, "model.ckpt")


def flaky(out: str) -> dict:
    """y = a fresh random number each run (no seed), judged with a tolerance it meets about
    half the time: a verification failure that is not deterministic."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("w", [4, 1])
        noise = tf.random.uniform([1, 1])
        tf.identity(tf.matmul(x, w) * 0.0 + noise, name="y")
        _save(v1, out)
    # |u1 - u2| <= t for two uniforms with probability 2t - t^2: 1/2 at t = 1 - 1/sqrt(2)
    return {"path": "model.ckpt", "args": ["--outputs", "y", "--tolerance", "0.2929",
                                           "--rtol", "0"],
            "targets": ["android"], "kind": "tf1",
            "peer": {"format": "checkpoint", "outputs": ["y"],
                     "inputs": [{"name": "x", "shape": [1, 4]}]}}


def builders() -> dict:
    return {**{f"reduce_cnn_{op}": (lambda out, op=op: small_cnn(out, op)) for op in INJECTED},
            "reduce_flaky": flaky}
