"""Build a tf_keras ResNet50 as a TF1 Saver checkpoint (model_dir with `checkpoint` state file).

    python models/resnet50_ckpt.py --out DIR [--optimizer adam|none] [--control-flow v1|v2]

ResNet50 (weights=None: random init, no downloads), input `input` [None, 224, 224, 3] float32,
output `probs` [None, 1000]. Built in graph mode with a labels placeholder, a cross-entropy loss and
a global step; with `--optimizer adam` an Adam train op is attached (so the checkpoint holds Adam
slots) and one step is run on seeded random data. Saved at global_step 200 as
DIR/model.ckpt-200.{meta,index,data-00000-of-00001}.

`--control-flow v1` builds the BatchNorm train/infer conds as Switch/Merge; v2 (default) as `If`.
"""

from __future__ import annotations

import argparse
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

v1 = tf.compat.v1
STEP = 200


def build(out_dir: str, optimizer: str = "adam", control_flow: str = "v2",
          train_step: bool = True) -> str:
    """Build and save; returns the checkpoint prefix."""
    v1.disable_eager_execution()
    if control_flow == "v1":
        v1.disable_control_flow_v2()
    else:
        v1.enable_control_flow_v2()
    graph = tf.Graph()
    with graph.as_default():
        # Keras draws initializer seeds from Python's `random`; the graph seed covers the rest.
        tf_keras.utils.set_random_seed(0)
        v1.set_random_seed(0)
        x = v1.placeholder(tf.float32, [None, 224, 224, 3], name="input")
        y = v1.placeholder(tf.int64, [None], name="labels")
        model = tf_keras.applications.ResNet50(weights=None, input_tensor=x, classes=1000)
        probs = tf.identity(model.output, name="probs")
        loss = tf.reduce_mean(tf_keras.losses.sparse_categorical_crossentropy(y, probs),
                              name="loss")
        global_step = v1.train.get_or_create_global_step()
        train_op = None
        if optimizer == "adam":
            # BatchNorm moving-average updates run with the step, as Keras' own fit() does.
            with tf.control_dependencies(model.updates):
                train_op = v1.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)
        saver = v1.train.Saver(max_to_keep=3, save_relative_paths=True)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            if train_op is not None and train_step:
                rng = np.random.default_rng(0)
                feed = {x: rng.standard_normal((2, 224, 224, 3), dtype=np.float32),
                        y: rng.integers(0, 1000, size=2),
                        tf_keras.backend.learning_phase(): True}
                sess.run(train_op, feed)
            sess.run(global_step.assign(STEP))
            os.makedirs(out_dir, exist_ok=True)
            return saver.save(sess, os.path.join(out_dir, "model.ckpt"), global_step=STEP)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="models/out/resnet50")
    parser.add_argument("--optimizer", choices=["adam", "none"], default="adam")
    parser.add_argument("--control-flow", choices=["v1", "v2"], default="v2")
    parser.add_argument("--no-train-step", action="store_true",
                        help="skip the single Adam step (slots stay zero)")
    args = parser.parse_args()
    print(build(args.out, args.optimizer, args.control_flow, not args.no_train_step))


if __name__ == "__main__":
    main()
