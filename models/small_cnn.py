"""Build a small tf_keras CNN (Conv + BatchNorm + Dropout) as a TF1 Saver checkpoint.

    python models/small_cnn.py --out models/out/cnn [--control-flow v1|v2] [--size N]
        [--wide FILTERS --blocks K] [--steps N]

Built in graph mode, called without `training=`, so BatchNorm and Dropout switch on the Keras
learning phase (`If` nodes with control flow v2, `Switch`/`Merge` with v1). Input `images`
[None, 16, 16, 3], output `probs` [None, 5]. Trained a few seeded steps, saved at step 200.
`--wide F --blocks K` adds K Conv2D(F) + BatchNorm + ReLU blocks after the first (big weights:
K = 4, F = 640 is 44 MB), and an output `mean` that needs no variable.
"""

from __future__ import annotations

import argparse
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

v1 = tf.compat.v1
tf.get_logger().setLevel("ERROR")


def build(out_dir: str, control_flow: str = "v2", steps: int = 5, size: int = 16,
          wide: int = 0, blocks: int = 0) -> str:
    if control_flow == "v1":
        v1.disable_control_flow_v2()
    else:
        v1.enable_control_flow_v2()
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        images = v1.placeholder(tf.float32, [None, size, size, 3], name="images")
        labels = v1.placeholder(tf.int64, [None], name="labels")
        extra = [layer for _ in range(blocks) for layer in (
            keras.layers.Conv2D(wide, 3, padding="same"), keras.layers.BatchNormalization(),
            keras.layers.ReLU())]
        if blocks:
            tf.reduce_mean(images, axis=[1, 2], name="mean")
        model = keras.Sequential([
            keras.layers.Conv2D(8, 3, padding="same"),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            *extra,
            keras.layers.DepthwiseConv2D(3, padding="same"),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(5),
        ])
        logits = model(images)
        tf.nn.softmax(logits, name="probs")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        global_step = v1.train.get_or_create_global_step()
        with tf.control_dependencies(model.updates):
            train_op = v1.train.AdamOptimizer(0.01).minimize(
                loss, global_step=global_step, var_list=model.trainable_variables)
        saver = v1.train.Saver()
        rng = np.random.default_rng(0)
        feats = rng.normal(size=(32, size, size, 3)).astype(np.float32)
        ys = rng.integers(0, 5, size=32)
        phase = keras.backend.learning_phase()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op, {images: feats, labels: ys, phase: True})
            sess.run(v1.assign(global_step, 200))
            os.makedirs(out_dir, exist_ok=True)
            return saver.save(sess, os.path.join(out_dir, "model.ckpt"), global_step=200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="models/out/cnn")
    parser.add_argument("--control-flow", choices=["v1", "v2"], default="v2")
    parser.add_argument("--size", type=int, default=16, help="image height and width")
    parser.add_argument("--wide", type=int, default=0, help="filters of the extra blocks")
    parser.add_argument("--blocks", type=int, default=0, help="extra Conv2D + BatchNorm blocks")
    parser.add_argument("--steps", type=int, default=5, help="training steps before saving")
    args = parser.parse_args()
    print(build(args.out, args.control_flow, args.steps, args.size, args.wide, args.blocks))


if __name__ == "__main__":
    main()
