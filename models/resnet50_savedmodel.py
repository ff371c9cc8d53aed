"""Save a tf_keras ResNet50 (`weights=None`: random init, no downloads) as a TF2 SavedModel.

    python models/resnet50_savedmodel.py --out DIR

Input `input_1` [None, 224, 224, 3] float32, output `predictions` [None, 1000]; used by
bench/bench_inspect.py.
"""

from __future__ import annotations

import argparse
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402


def build(out_dir: str) -> str:
    tf_keras.utils.set_random_seed(0)
    model = tf_keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3))
    tf.saved_model.save(model, out_dir)
    return out_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    print(build(parser.parse_args().out))


if __name__ == "__main__":
    main()
