"""Build the source cases of issue 14 (seeded; small; no downloads).

    python models/source_cases.py OUT_DIR

OUT_DIR/
  tf_keras.keras        a float CNN saved as `.keras` by tf_keras (metadata says Keras 2):
                        input `image`, output `probs`
  tf_keras_lambda.keras the same with a Lambda layer (refused without --unsafe)
  cqat.h5               tfmot cluster-preserving QAT (4 clusters per kernel), as tfmot saves it
  qat_custom.h5         tfmot QAT with a custom QuantizeConfig on `probs` (needs
                        --custom-objects quantize_configs:DenseQuantizeConfig)
  quantize_configs.py   that QuantizeConfig's module
  v1/                   a TF1 Saver checkpoint in format V1 (SaverDef.V1: model.ckpt-7, no
                        .index) with its .meta and `checkpoint` file: `x` -> `probs`
  v1_sharded/           the same saved sharded (model.ckpt-7-00000-of-00001)
  short_restore/        a V2 checkpoint whose meta graph's RestoreV2 lists fewer tensor names
                        than the Saver restores (a corrupt .meta)
  tf1_savedmodel/       a TF1 SavedModel (SavedModelBuilder) of `x` -> `out`, a softmax layer
  v1_cond_savedmodel/   a TF1 SavedModel (SavedModelBuilder) with a v1 `cond` on a constant:
                        `x` -> `out`, which OpenVINO's frontend names after the cond's tensor
  digamma_savedmodel/   a TF1 SavedModel of `x` -> `out` through Digamma (no OpenVINO rule)
  two_inputs_savedmodel/ a TF2 SavedModel whose signature takes `zeta` then `alpha`
  alias_savedmodel/     a TF2 SavedModel whose outputs `a` and `b` are one tensor
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1

# the user's module beside the model (--custom-objects finds it in the working directory); the
# QuantizeConfig itself is the zoo's
QUANTIZE_CONFIGS = f'''"""A custom tfmot QuantizeConfig for Dense layers (models/source_cases.py)."""
import sys

sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from zoo_tfmot import DenseQuantizeConfig  # noqa: E402,F401
'''


def _cnn(k, lam: bool = False):
    image = k.Input((8, 8, 1), name="image")
    x = k.layers.Conv2D(4, 3, activation="relu")(image)
    if lam:
        x = k.layers.Lambda(lambda t: t * 2.0)(x)
    x = k.layers.Flatten()(x)
    return k.Model(image, k.layers.Dense(3, activation="softmax", name="probs")(x))


def _data():
    rng = np.random.default_rng(0)
    return rng.random((32, 8, 8, 1), dtype=np.float32), rng.integers(0, 3, 32)


def tf_keras_files(out: str) -> None:
    import tf_keras as k

    _cnn(k).save(os.path.join(out, "tf_keras.keras"))
    _cnn(k, lam=True).save(os.path.join(out, "tf_keras_lambda.keras"))


def tfmot_files(out: str) -> None:
    import tensorflow_model_optimization as tfmot
    import tf_keras as k

    x, y = _data()
    clustering, quantization = tfmot.clustering.keras, tfmot.quantization.keras
    clustered = clustering.cluster_weights(
        _cnn(k), number_of_clusters=4,
        cluster_centroids_init=clustering.CentroidInitialization.LINEAR)
    clustered.compile("adam", "sparse_categorical_crossentropy")
    clustered.fit(x, y, epochs=1, verbose=0)
    cqat = quantization.quantize_apply(
        quantization.quantize_annotate_model(clustering.strip_clustering(clustered)),
        tfmot.experimental.combine.Default8BitClusterPreserveQuantizeScheme())
    cqat.compile("adam", "sparse_categorical_crossentropy")
    cqat.fit(x, y, epochs=1, verbose=0)
    cqat.save(os.path.join(out, "cqat.h5"))

    with open(os.path.join(out, "quantize_configs.py"), "w") as f:
        f.write(QUANTIZE_CONFIGS)
    sys.path.insert(0, out)
    from quantize_configs import DenseQuantizeConfig

    image = k.Input((8, 8, 1), name="image")
    h = k.layers.Flatten()(k.layers.Conv2D(4, 3, activation="relu")(image))
    dense = quantization.quantize_annotate_layer(
        k.layers.Dense(3, activation="softmax", name="probs"), DenseQuantizeConfig())
    with quantization.quantize_scope({"DenseQuantizeConfig": DenseQuantizeConfig}):
        qat = quantization.quantize_apply(k.Model(image, dense(h)))
    qat.compile("adam", "sparse_categorical_crossentropy")
    qat.fit(x, y, epochs=1, verbose=0)
    qat.save(os.path.join(out, "qat_custom.h5"))


def _tf1_checkpoint(prefix: str, **saver_args) -> None:
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        w = v1.get_variable("w", initializer=tf.constant([[1., 2.], [3., 4.], [5., 6.]]))
        b = v1.get_variable("b", initializer=tf.constant([0.5, -0.5]))
        tf.nn.softmax(tf.matmul(x, w) + b, name="probs")
        saver = v1.train.Saver(**saver_args)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, prefix, global_step=7)


def checkpoints(out: str) -> None:
    from tensorflow.core.protobuf import meta_graph_pb2, saver_pb2

    _tf1_checkpoint(os.path.join(out, "v1", "model.ckpt"), write_version=saver_pb2.SaverDef.V1)
    _tf1_checkpoint(os.path.join(out, "v1_sharded", "model.ckpt"), sharded=True,
                    write_version=saver_pb2.SaverDef.V1)
    prefix = os.path.join(out, "short_restore", "model.ckpt")
    _tf1_checkpoint(prefix)
    meta = meta_graph_pb2.MetaGraphDef()
    with open(prefix + "-7.meta", "rb") as f:
        meta.ParseFromString(f.read())
    by_name = {n.name: n for n in meta.graph_def.node}
    for node in meta.graph_def.node:
        if node.op == "RestoreV2":
            names = by_name[node.input[1].split(":")[0]].attr["value"].tensor
            del names.string_val[1:]
            names.tensor_shape.dim[0].size = 1
    with open(prefix + "-7.meta", "wb") as f:
        f.write(meta.SerializeToString())


def _tf1_savedmodel(folder: str, body) -> None:
    """SavedModelBuilder of `out = body(x @ w)`, signature `x` -> `out` (control flow v1)."""
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("w", initializer=tf.constant(np.arange(12, dtype=np.float32)
                                                         .reshape(4, 3) / 10), use_resource=False)
        out = tf.identity(body(tf.matmul(x, w)), name="out")
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(folder)
            signature = v1.saved_model.predict_signature_def({"x": x}, {"out": out})
            builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={
                "serving_default": signature})
            builder.save()


def savedmodels(out: str) -> None:
    _tf1_savedmodel(os.path.join(out, "tf1_savedmodel"), tf.nn.softmax)
    v1.disable_control_flow_v2()
    _tf1_savedmodel(os.path.join(out, "v1_cond_savedmodel"),
                    lambda y: v1.cond(tf.constant(False), lambda: y * 2.0, lambda: y + 1.0))
    v1.enable_control_flow_v2()
    _tf1_savedmodel(os.path.join(out, "digamma_savedmodel"), lambda y: tf.math.digamma(y + 1.0))

    class TwoInputs(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32),
                                      tf.TensorSpec([None, 3], tf.float32)])
        def serve(self, zeta, alpha):
            return {"out": tf.matmul(zeta, self.w) + alpha}

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
        def alias(self, x):
            y = tf.matmul(x, self.w)
            return {"a": y, "b": y}

    module = TwoInputs()
    tf.saved_model.save(module, os.path.join(out, "two_inputs_savedmodel"),
                        signatures={"serving_default": module.serve})
    tf.saved_model.save(module, os.path.join(out, "alias_savedmodel"),
                        signatures={"serving_default": module.alias})


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    tf.random.set_seed(0)
    checkpoints(out)
    savedmodels(out)
    tf_keras_files(out)
    tfmot_files(out)


if __name__ == "__main__":
    main(sys.argv[1])
