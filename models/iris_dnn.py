"""Build an iris-like DNN as a TF1 Saver checkpoint (model_dir with `checkpoint` state file).

    python models/iris_dnn.py --out models/out/iris [--variables ref|resource|partitioned]
        [--sharded] [--dropout flag|baked|none] [--batchnorm] [--control-flow v1|v2]

Input `x` [None, 4] float32, output `probs` [None, 3]. Trained 200 Adam steps on seeded synthetic
data (no downloads) and saved at global_step 200 with summaries, an optimizer and a Saver in the
graph, as training code leaves it.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
tf.get_logger().setLevel("ERROR")


def synthetic_iris(n: int = 150, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three Gaussian blobs in 4-D, like the iris measurements."""
    rng = np.random.default_rng(seed)
    centers = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.5, 2.0]])
    labels = rng.integers(0, 3, size=n)
    feats = centers[labels] + rng.normal(scale=0.3, size=(n, 4))
    return feats.astype(np.float32), labels.astype(np.int64)


def _batchnorm(h, is_training, use_resource):
    """Hand-written batch norm with moving averages and a train/infer cond, as TF1 code did."""
    width = h.shape[-1]
    gamma = v1.get_variable("bn/gamma", [width], initializer=v1.ones_initializer(),
                            use_resource=use_resource)
    beta = v1.get_variable("bn/beta", [width], initializer=v1.zeros_initializer(),
                           use_resource=use_resource)
    mean = v1.get_variable("bn/moving_mean", [width], initializer=v1.zeros_initializer(),
                           trainable=False, use_resource=use_resource)
    var = v1.get_variable("bn/moving_variance", [width], initializer=v1.ones_initializer(),
                          trainable=False, use_resource=use_resource)

    def train():
        m, v = tf.nn.moments(h, axes=[0])
        updates = [v1.assign(mean, 0.9 * mean + 0.1 * m), v1.assign(var, 0.9 * var + 0.1 * v)]
        with tf.control_dependencies(updates):
            return tf.nn.batch_normalization(h, m, v, beta, gamma, 1e-3)

    def infer():
        return tf.nn.batch_normalization(h, mean, var, beta, gamma, 1e-3)

    return v1.cond(is_training, train, infer, name="bn_cond")


def build(out_dir: str, variables: str = "ref", sharded: bool = False, dropout: str = "flag",
          batchnorm: bool = False, control_flow: str = "v2", steps: int = 200,
          odd_op: bool = False, named_output: bool = False) -> str:
    """Train and save; returns the checkpoint prefix."""
    if control_flow == "v1":
        v1.disable_control_flow_v2()
    else:
        v1.enable_control_flow_v2()
    use_resource = variables != "ref"
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        y = v1.placeholder(tf.int64, [None], name="y")
        is_training = v1.placeholder_with_default(False, [], name="is_training")
        partitioner = v1.fixed_size_partitioner(2) if variables == "partitioned" else None
        with v1.variable_scope("dnn"):
            w1 = v1.get_variable("hidden1/kernel", [4, 16], partitioner=partitioner,
                                 use_resource=use_resource)
            b1 = v1.get_variable("hidden1/bias", [16], initializer=v1.zeros_initializer(),
                                 use_resource=use_resource)
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            if batchnorm:
                h = _batchnorm(h, is_training, use_resource)
            if dropout == "flag":
                keep_prob = v1.placeholder_with_default(1.0, [], name="keep_prob")
                h = v1.nn.dropout(h, keep_prob=keep_prob)
            elif dropout == "baked":
                h = tf.nn.dropout(h, rate=0.5, seed=1)
            w2 = v1.get_variable("hidden2/kernel", [16, 16], use_resource=use_resource)
            b2 = v1.get_variable("hidden2/bias", [16], initializer=v1.zeros_initializer(),
                                 use_resource=use_resource)
            h = tf.nn.relu(tf.matmul(h, w2) + b2)
            w3 = v1.get_variable("logits/kernel", [16, 3], use_resource=use_resource)
            b3 = v1.get_variable("logits/bias", [3], initializer=v1.zeros_initializer(),
                                 use_resource=use_resource)
            logits = tf.add(tf.matmul(h, w3), b3, name="logits")
        if named_output:  # the user's name on an Identity: `probs` wraps `Softmax`
            probs = tf.identity(tf.nn.softmax(logits), name="probs")
        else:
            probs = tf.nn.softmax(logits, name="probs")
        if odd_op:  # outputs through ops some targets lack
            # Cumprod: not a TFLite builtin, but a Flex (SELECT_TF_OPS) kernel
            tf.math.cumprod(probs, axis=1, name="flex_only")
            # Igamma: no TFLite kernel at all, no tf2onnx mapping
            tf.math.igamma(tf.abs(logits) + 1.0, tf.constant(2.0), name="odd")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(probs, 1), y), tf.float32))
        v1.summary.scalar("loss", loss)
        v1.summary.scalar("accuracy", accuracy)
        summaries = v1.summary.merge_all()
        global_step = v1.train.get_or_create_global_step()
        train_op = v1.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
        saver = v1.train.Saver(sharded=sharded, max_to_keep=3)
        feats, labels = synthetic_iris()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(steps):
                feed = {x: feats, y: labels}
                if batchnorm:
                    feed[is_training] = True
                sess.run([train_op, summaries], feed)
            tf.io.gfile.makedirs(out_dir)  # local or gs://
            return saver.save(sess, os.path.join(out_dir, "model.ckpt"), global_step=global_step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="models/out/iris")
    parser.add_argument("--variables", choices=["ref", "resource", "partitioned"], default="ref")
    parser.add_argument("--sharded", action="store_true")
    parser.add_argument("--dropout", choices=["flag", "baked", "none"], default="flag")
    parser.add_argument("--batchnorm", action="store_true")
    parser.add_argument("--control-flow", choices=["v1", "v2"], default="v2")
    args = parser.parse_args()
    prefix = build(args.out, args.variables, args.sharded, args.dropout, args.batchnorm,
                   args.control_flow)
    print(prefix)


if __name__ == "__main__":
    main()
