"""Real Estimator model_dirs and exports, written by TensorFlow 2.15's `tf.estimator` (TF 2.16
removed it), checked in under models/estimators/ because no test venv has it:

    python3.11 -m venv /work/venv-tf215
    /work/venv-tf215/bin/pip install tensorflow-cpu==2.15.1 tensorflow-estimator==2.15.0
    /work/venv-tf215/bin/python models/estimators.py --out models/estimators

For each of a `DNNClassifier` (`dnn`) and a `DNNLinearCombinedClassifier` (`wide_deep`) over
feature columns (numeric, bucketized, vocabulary list, embedding, crossed), and a
`DNNClassifier` over the numeric features alone (`numeric`: numeric and bucketized columns,
no sparse op), trained 25 steps on seeded synthetic data from a `tf.data` input_fn
(`--names numeric` writes only that one):

  NAME/model_dir/          what the Estimator wrote (checkpoint state file, model.ckpt-25.*;
                           `keep_checkpoint_max=1`), less its events files (TensorBoard's) and
                           graph.pbtxt (the .meta's graph as text: 0.6 MB)
  NAME/export_parsing/     `export_saved_model` with a parsing receiver (serialized tf.Example)
  NAME/export_raw/         `export_saved_model` with a raw receiver (one placeholder a feature)

and `features.npz` beside them: 8 rows of the raw features (for verification data).
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

COLORS = ["red", "green", "blue", "yellow"]
STEPS = 25


def synthetic(n: int = 256, seed: int = 0) -> tuple[dict, np.ndarray]:
    """Features `age` (float), `hours` (float), `color` (string), `label` from a seeded rule."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 80, n).astype(np.float32)
    hours = rng.uniform(0, 60, n).astype(np.float32)
    color = rng.choice(COLORS, n)
    label = ((age / 80 + hours / 60 + (color == "blue")) > 1.2).astype(np.int64)
    return {"age": age[:, None], "hours": hours[:, None], "color": color[:, None]}, label


def columns():
    """(wide, deep) feature columns: numeric, bucketized, vocabulary list, embedding, crossed."""
    fc = tf.feature_column
    age = fc.numeric_column("age")
    hours = fc.numeric_column("hours")
    age_buckets = fc.bucketized_column(age, [25, 35, 45, 55, 65])
    color = fc.categorical_column_with_vocabulary_list("color", COLORS)
    crossed = fc.crossed_column([age_buckets, color], hash_bucket_size=16)
    deep = [age, hours, age_buckets, fc.embedding_column(color, 3),
            fc.embedding_column(crossed, 4)]
    wide = [age_buckets, color, crossed]
    return wide, deep


def numeric_columns():
    """The numeric features alone: numeric and bucketized columns."""
    fc = tf.feature_column
    age = fc.numeric_column("age")
    return [age, fc.numeric_column("hours"), fc.bucketized_column(age, [25, 35, 45, 55, 65])]


def input_fn():
    features, label = synthetic()
    data = tf.data.Dataset.from_tensor_slices((features, label))
    return data.shuffle(64, seed=0).repeat().batch(16)


def estimators(root: Path) -> dict:
    """{name: (estimator, its feature columns)}."""
    wide, deep = columns()
    config = tf.estimator.RunConfig(tf_random_seed=0, keep_checkpoint_max=1,
                                    save_summary_steps=None, log_step_count_steps=None)
    return {
        "dnn": (tf.estimator.DNNClassifier(
            hidden_units=[16, 8], feature_columns=deep, model_dir=str(root / "dnn/model_dir"),
            config=config), deep),
        "wide_deep": (tf.estimator.DNNLinearCombinedClassifier(
            linear_feature_columns=wide, dnn_feature_columns=deep, dnn_hidden_units=[16, 8],
            model_dir=str(root / "wide_deep/model_dir"), config=config), wide + deep),
        "numeric": (tf.estimator.DNNClassifier(
            hidden_units=[16, 8], feature_columns=numeric_columns(),
            model_dir=str(root / "numeric/model_dir"), config=config), numeric_columns()),
    }


def export(estimator, used: list, folder: Path) -> None:
    """Both receivers, each to folder/export_KIND (the timestamped folder renamed), of the
    features the columns `used` read."""
    spec = tf.feature_column.make_parse_example_spec(used)
    with tf.Graph().as_default():  # (the receiver makes placeholders like these in its graph)
        raw = {key: tf.compat.v1.placeholder(tf.string if key == "color" else tf.float32,
                                             [None, 1], name=key) for key in sorted(spec)}
    receivers = {
        "parsing": tf.estimator.export.build_parsing_serving_input_receiver_fn(spec),
        "raw": tf.estimator.export.build_raw_serving_input_receiver_fn(raw),
    }
    for kind, receiver in receivers.items():
        base = folder / f"export_{kind}.tmp"
        written = estimator.export_saved_model(str(base), receiver)
        target = folder / f"export_{kind}"
        shutil.rmtree(target, ignore_errors=True)
        Path(written.decode() if isinstance(written, bytes) else written).rename(target)
        shutil.rmtree(base)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("models/estimators"))
    parser.add_argument("--names", nargs="*", default=["dnn", "wide_deep", "numeric"])
    args = parser.parse_args()
    tf.get_logger().setLevel("ERROR")
    for name in args.names:
        shutil.rmtree(args.out / name, ignore_errors=True)
    for name, (estimator, used) in estimators(args.out).items():
        if name not in args.names:
            continue
        estimator.train(input_fn, steps=STEPS)
        for events in (args.out / name / "model_dir").rglob("events.out.tfevents.*"):
            events.unlink()  # TensorBoard's
        (args.out / name / "model_dir" / "graph.pbtxt").unlink()  # the .meta's graph, as text
        export(estimator, used, args.out / name)
    features, _ = synthetic(8, seed=1)
    np.savez(args.out / "features.npz", **features)


if __name__ == "__main__":
    main()
