"""Build a model over 2 GiB as a TF1 Saver checkpoint + meta graph (issue 46), fast.

    python models/big.py OUT_DIR [--rows 4400000] [--width 128]

An embedding table `embedding/table` [rows, width] float32 (by default 4,400,000 x 128: 2.10 GiB)
and a small head: ids `ids` [None, 8] int32 -> embedding lookup -> mean -> dense(16) -> softmax
`probs`. The table is filled by a seeded random op at run time, never a Const, so no GraphDef
holds its values (the meta graph stays a few KB), and saved by `tf.compat.v1.train.Saver` at
global_step 1: OUT_DIR/model.ckpt-1{.index,.data-00000-of-00001,.meta} and a `checkpoint` file.
`--rows` scales it down for tests. Prints the build's time and the table's bytes.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROWS, WIDTH, IDS, CLASSES = 4_400_000, 128, 8, 16


def build(out_dir: str, rows: int = ROWS, width: int = WIDTH) -> str:
    """Fill, save; returns the checkpoint prefix."""
    import tensorflow as tf

    v1 = tf.compat.v1
    os.makedirs(out_dir, exist_ok=True)
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        ids = v1.placeholder(tf.int32, [None, IDS], name="ids")
        with v1.variable_scope("embedding"):
            table = v1.get_variable("table", [rows, width], tf.float32,
                                    v1.random_uniform_initializer(-0.05, 0.05, seed=0))
        pooled = tf.reduce_mean(tf.nn.embedding_lookup(table, ids), axis=1)
        with v1.variable_scope("head"):
            kernel = v1.get_variable("kernel", [width, CLASSES], tf.float32,
                                     v1.glorot_uniform_initializer(seed=1))
            bias = v1.get_variable("bias", [CLASSES], tf.float32, v1.zeros_initializer())
        tf.nn.softmax(tf.matmul(pooled, kernel) + bias, name="probs")
        step = v1.train.get_or_create_global_step()
        saver = v1.train.Saver()
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            session.run(step.assign(1))
            return saver.save(session, os.path.join(out_dir, "model.ckpt"), global_step=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--rows", type=int, default=ROWS, help="the embedding table's rows")
    parser.add_argument("--width", type=int, default=WIDTH, help="its columns")
    args = parser.parse_args()
    start = time.perf_counter()
    prefix = build(args.out_dir, args.rows, args.width)
    print(f"{prefix}: table {args.rows * args.width * 4 / 2**30:.2f} GiB, built in "
          f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
