"""Build every sample checkpoint the tests use, in one process (one TensorFlow start-up).

    python models/build_samples.py OUT_DIR

OUT_DIR/<name>/ gets a model_dir per variant; see SAMPLES for what each exercises.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import iris_dnn  # noqa: E402
import small_cnn  # noqa: E402

SAMPLES = {
    # ref variables, keep_prob PlaceholderWithDefault dropout
    "iris": lambda out: iris_dnn.build(out),
    # resource variables, dropout rate baked in, batch norm cond as `If` (control flow v2)
    "iris_resource": lambda out: iris_dnn.build(out, variables="resource", dropout="baked",
                                                batchnorm=True, control_flow="v2"),
    # partitioned variables in a sharded checkpoint, batch norm cond as Switch/Merge
    "iris_partitioned": lambda out: iris_dnn.build(out, variables="partitioned", sharded=True,
                                                   batchnorm=True, control_flow="v1"),
    # extra outputs `flex_only` (Cumprod: TFLite only with SELECT_TF_OPS) and `odd` (Igamma: no
    # TFLite kernel, no tf2onnx mapping)
    "iris_odd_op": lambda out: iris_dnn.build(out, odd_op=True),
    # output named by the user on an Identity (probs = tf.identity(softmax, name="probs"))
    "iris_named": lambda out: iris_dnn.build(out, named_output=True),
    # tf_keras CNN with BatchNorm + Dropout on the learning phase, both control flow versions
    "cnn_v1": lambda out: small_cnn.build(out, control_flow="v1"),
    "cnn_v2": lambda out: small_cnn.build(out, control_flow="v2"),
}


def main() -> None:
    out = sys.argv[1]
    for name, build in SAMPLES.items():
        print(build(os.path.join(out, name)))


if __name__ == "__main__":
    main()
