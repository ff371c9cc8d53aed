"""Zoo: TF1 graph-mode classics saved as checkpoints with their meta graph (tf.compat.v1 graph,
a Saver; control flow v1 as TF1 wrote it), freeze_graph's own test scenarios, and a TF2
SavedModel whose input has unknown rank. Each builder returns its zoo.json entry (see zoo.py)."""

from __future__ import annotations

import contextlib
import os

TF1_TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "onnx"]


@contextlib.contextmanager
def _graph(control_flow_v1: bool = True):
    """A fresh graph (seeded), built with control flow v1 the way TF1 code built it."""
    import tensorflow as tf

    if control_flow_v1:
        tf.compat.v1.disable_control_flow_v2()
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.compat.v1.set_random_seed(0)
            yield tf, tf.compat.v1
    finally:
        tf.compat.v1.enable_control_flow_v2()


def _save(v1, out: str, write_version=None) -> None:
    """Initialise, save `model.ckpt` and its meta graph the way TF1 training loops did."""
    kwargs = {} if write_version is None else {"write_version": write_version}
    saver = v1.train.Saver(**kwargs)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        saver.save(sess, os.path.join(out, "model.ckpt"))


def _entry(outputs: list[str], inputs: list[dict], targets=TF1_TARGETS, args=()) -> dict:
    return {"path": "model.ckpt", "args": ["--outputs", ",".join(outputs), *args],
            "targets": list(targets), "kind": "tf1",
            "peer": {"format": "checkpoint", "outputs": outputs, "inputs": inputs}}


def _batch_norm(tf, v1, x, is_training, scope):
    """slim.batch_norm(fused=True) with a tensor is_training: a tf.cond between the training
    branch (batch statistics, moving averages updated) and the inference branch."""
    channels = x.shape[-1]
    with v1.variable_scope(scope):
        beta = v1.get_variable("beta", [channels], initializer=v1.zeros_initializer())
        mean = v1.get_variable("moving_mean", [channels], trainable=False,
                               initializer=v1.random_normal_initializer(0.0, 0.1))
        var = v1.get_variable("moving_variance", [channels], trainable=False,
                              initializer=v1.random_uniform_initializer(0.5, 1.5))

        def training():
            y, batch_mean, batch_var = v1.nn.fused_batch_norm(x, tf.ones([channels]), beta,
                                                              epsilon=1e-3, is_training=True)
            updates = [v1.assign(mean, 0.997 * mean + 0.003 * batch_mean),
                       v1.assign(var, 0.997 * var + 0.003 * batch_var)]
            with tf.control_dependencies(updates):
                return tf.identity(y)

        def inference():
            y, _, _ = v1.nn.fused_batch_norm(x, tf.ones([channels]), beta, mean=mean,
                                             variance=var, epsilon=1e-3, is_training=False)
            return y

        return v1.cond(is_training, training, inference)


def _conv_bn(tf, v1, x, filters, size, is_training, scope):
    with v1.variable_scope(scope):
        kernel = v1.get_variable("weights", [size, size, x.shape[-1], filters])
        y = tf.nn.conv2d(x, kernel, 1, "SAME")
    return tf.nn.relu(_batch_norm(tf, v1, y, is_training, scope + "/BatchNorm"))


def slim_inception(out: str) -> dict:
    """A slim-style Inception block (four branches, conv + batch_norm + relu) on 32x32 images,
    with the is_training flag as a placeholder_with_default (False)."""
    with _graph() as (tf, v1):
        images = v1.placeholder(tf.float32, [None, 32, 32, 3], name="images")
        is_training = v1.placeholder_with_default(False, [], name="is_training")
        net = _conv_bn(tf, v1, images, 16, 3, is_training, "Conv2d_1a_3x3")
        net = tf.nn.max_pool2d(net, 3, 2, "SAME")
        with v1.variable_scope("Mixed_5b"):
            b0 = _conv_bn(tf, v1, net, 8, 1, is_training, "Branch_0")
            b1 = _conv_bn(tf, v1, _conv_bn(tf, v1, net, 6, 1, is_training, "Branch_1a"),
                          8, 3, is_training, "Branch_1b")
            b2 = _conv_bn(tf, v1, _conv_bn(tf, v1, net, 4, 1, is_training, "Branch_2a"),
                          8, 5, is_training, "Branch_2b")
            pool = tf.nn.avg_pool2d(net, 3, 1, "SAME")
            b3 = _conv_bn(tf, v1, pool, 8, 1, is_training, "Branch_3")
            net = tf.concat([b0, b1, b2, b3], axis=3)
        net = tf.reduce_mean(net, [1, 2])
        weights = v1.get_variable("Logits/weights", [32, 10])
        biases = v1.get_variable("Logits/biases", [10], initializer=v1.zeros_initializer())
        tf.nn.softmax(tf.matmul(net, weights) + biases, name="probs")
        _save(v1, out)
    from zoo_keras import CNN_TARGETS

    return _entry(["probs"], [{"name": "images", "shape": [1, 32, 32, 3], "dtype": "float32"}],
                  targets=CNN_TARGETS)


def dynamic_rnn(out: str) -> dict:
    with _graph() as (tf, v1):
        inputs = v1.placeholder(tf.float32, [None, 10, 8], name="inputs")
        cell = v1.nn.rnn_cell.BasicLSTMCell(16)
        _, state = v1.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
        weights = v1.get_variable("logits/weights", [16, 3])
        tf.nn.softmax(tf.matmul(state.h, weights), name="probs")
        _save(v1, out)
    return _entry(["probs"], [{"name": "inputs", "shape": [1, 10, 8], "dtype": "float32"}])


def while_loop(out: str) -> dict:
    with _graph() as (tf, v1):
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("w", [4, 4])
        _, h = v1.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w))),
                             [tf.constant(0), x])
        tf.identity(h, name="output")
        _save(v1, out)
    return _entry(["output"], [{"name": "x", "shape": [1, 4], "dtype": "float32"}])


def partitioned_vars(out: str) -> dict:
    """A wide model whose kernel is split over three variables (fixed_size_partitioner)."""
    with _graph() as (tf, v1):
        x = v1.placeholder(tf.float32, [None, 24], name="features")
        kernel = v1.get_variable("linear/kernel", [24, 8],
                                 partitioner=v1.fixed_size_partitioner(3))
        bias = v1.get_variable("linear/bias", [8], initializer=v1.zeros_initializer())
        tf.nn.softmax(tf.matmul(x, kernel) + bias, name="probs")
        _save(v1, out)
    return _entry(["probs"], [{"name": "features", "shape": [1, 24], "dtype": "float32"}])


def v1_checkpoint(out: str) -> dict:
    """freeze_graph's testFreezeGraphV1: a checkpoint in the V1 format (no .index)."""
    from tensorflow.core.protobuf import saver_pb2

    with _graph() as (tf, v1):
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("dense/kernel", [4, 3])
        tf.nn.softmax(tf.matmul(x, w), name="probs")
        _save(v1, out, write_version=saver_pb2.SaverDef.V1)
    return _entry(["probs"], [{"name": "x", "shape": [1, 4], "dtype": "float32"}])


def no_placeholder(out: str) -> dict:
    """freeze_graph's testFreezeGraphV2 scenario: output_node = variable_node * 2."""
    with _graph() as (tf, v1):
        variable = v1.Variable(1.0, name="variable_node")
        tf.multiply(variable, 2.0, name="output_node")
        _save(v1, out)
    return _entry(["output_node"], [])


def unknown_rank_savedmodel(out: str) -> dict:
    """A TF2 SavedModel whose signature input has unknown rank; `--inputs x[1,4]` fixes it."""
    import numpy as np
    import tensorflow as tf

    class Scale(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.linspace(0.5, 2.0, 4, dtype=np.float32), name="w")

        @tf.function(input_signature=[tf.TensorSpec(None, tf.float32, name="x")])
        def serve(self, x):
            return {"y": tf.nn.relu(x * self.w + 1.0)}

    module = Scale()
    tf.saved_model.save(module, os.path.join(out, "saved_model"),
                        signatures={"serving_default": module.serve})
    return {"path": "saved_model", "args": ["--inputs", "x[1,4]"], "targets": list(TF1_TARGETS),
            "kind": "savedmodel",
            "peer": {"format": "saved_model",
                     "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}]}}



def global_norm_bn(out: str) -> dict:
    """optimize_for_inference's testFoldBatchNorms: a conv followed by the deprecated
    BatchNormWithGlobalNormalization (mean, variance, beta, gamma; variance_epsilon), in a
    graph of producer version 8 as that test makes it."""
    from tensorflow.python.framework import test_util

    with _graph() as (tf, v1):
        test_util.set_producer_version(v1.get_default_graph(), 8)  # the op went in version 9
        x = v1.placeholder(tf.float32, [None, 6, 6, 2], name="input")
        kernel = v1.get_variable("conv/weights", [1, 2, 2, 2])
        conv = tf.nn.conv2d(x, kernel, [1, 1, 1, 1], "SAME", name="conv_op")
        stats = {name: v1.get_variable(f"bn/{name}", [2], initializer=init)
                 for name, init in [("mean", v1.random_normal_initializer(0.0, 0.5)),
                                    ("variance", v1.random_uniform_initializer(0.5, 1.5)),
                                    ("beta", v1.random_normal_initializer(0.0, 0.5)),
                                    ("gamma", v1.random_uniform_initializer(0.5, 1.5))]}
        bn = tf.raw_ops.BatchNormWithGlobalNormalization(
            t=conv, m=stats["mean"], v=stats["variance"], beta=stats["beta"],
            gamma=stats["gamma"], variance_epsilon=0.00001, scale_after_normalization=True,
            name="output_bn")
        tf.identity(bn, name="output")
        _save(v1, out)
    return _entry(["output"], [{"name": "input", "shape": [1, 6, 6, 2], "dtype": "float32"}])


def fixed_batch_savedmodel(out: str) -> dict:
    """saved_model_cli's large-input AOT test: a SavedModel whose input has a fixed batch of
    2048 rows (x[2048,16] @ w[16,16])."""
    import numpy as np
    import tensorflow as tf

    class Large(tf.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.w = tf.Variable(rng.standard_normal((16, 16)).astype(np.float32), name="w")

        @tf.function(input_signature=[tf.TensorSpec([2048, 16], tf.float32, name="x")])
        def serve(self, x):
            return {"y": tf.matmul(x, self.w)}

    module = Large()
    tf.saved_model.save(module, os.path.join(out, "saved_model"),
                        signatures={"serving_default": module.serve})
    return {"path": "saved_model", "args": [], "targets": list(TF1_TARGETS),
            "kind": "savedmodel",
            "peer": {"format": "saved_model",
                     "inputs": [{"name": "x", "shape": [2048, 16], "dtype": "float32"}]}}


def shapeless_keep_prob(out: str) -> dict:
    """The TF1 tutorials' `keep_prob = tf.placeholder(tf.float32)`: a dropout rate placeholder
    of unknown rank, beside an input placeholder of unknown shape (`--inputs x[1,4]`)."""
    with _graph() as (tf, v1):
        x = v1.placeholder(tf.float32, name="x")
        keep_prob = v1.placeholder(tf.float32, name="keep_prob")
        w = v1.get_variable("dense/kernel", [4, 3])
        hidden = v1.nn.dropout(tf.nn.relu(tf.matmul(x, w)), keep_prob=keep_prob)
        tf.nn.softmax(hidden, name="probs")
        _save(v1, out)
    return _entry(["probs"], [{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                  args=["--inputs", "x[1,4]"])


def training_saver_savedmodel(out: str) -> dict:
    """A TF1 SavedModel (SavedModelBuilder) whose graph still holds the training loop's own
    `tf.train.Saver`: its SaveV2 writes files, but neither loading nor the outputs run it."""
    with _graph() as (tf, v1):
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("dense/kernel", [4, 3])
        probs = tf.nn.softmax(tf.matmul(x, w), name="probs")
        v1.train.Saver(name="training_saver")
        builder = v1.saved_model.Builder(os.path.join(out, "saved_model"))
        signature = v1.saved_model.predict_signature_def({"x": x}, {"probs": probs})
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            builder.add_meta_graph_and_variables(
                sess, ["serve"], signature_def_map={"serving_default": signature})
        builder.save()
    return {"path": "saved_model", "args": [], "targets": list(TF1_TARGETS),
            "kind": "savedmodel",
            "peer": {"format": "saved_model",
                     "inputs": [{"name": "x", "shape": [1, 4], "dtype": "float32"}]}}


def defun_calls(out: str) -> dict:
    """TF1 functions defined with `function.Defun` and called from the graph: the call is a
    node whose op is the function's name (no PartitionedCall)."""
    from tensorflow.python.framework import function

    with _graph() as (tf, v1):
        @function.Defun(tf.float32, tf.float32, func_name="DenseRelu")
        def dense_relu(x, w):
            return tf.nn.relu(tf.matmul(x, w))

        @function.Defun(tf.float32, func_name="Scale")
        def scale(x):
            return x * 0.5 + 1.0

        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w1 = v1.get_variable("dense1/kernel", [4, 8])
        w2 = v1.get_variable("dense2/kernel", [8, 3])
        hidden = scale(dense_relu(x, w1))
        tf.nn.softmax(tf.reshape(dense_relu(hidden, w2), [-1, 3]), name="probs")
        _save(v1, out)
    return _entry(["probs"], [{"name": "x", "shape": [1, 4], "dtype": "float32"}])


def builders() -> dict:
    return dict(slim_inception=slim_inception, dynamic_rnn=dynamic_rnn, while_loop=while_loop,
                partitioned_vars=partitioned_vars, v1_checkpoint=v1_checkpoint,
                no_placeholder=no_placeholder, unknown_rank_savedmodel=unknown_rank_savedmodel,
                global_norm_bn=global_norm_bn, fixed_batch_savedmodel=fixed_batch_savedmodel,
                shapeless_keep_prob=shapeless_keep_prob,
                training_saver_savedmodel=training_saver_savedmodel, defun_calls=defun_calls)
