"""Build one model of every non-checkpoint kind graphfreeze loads (seeded; small; no downloads).

    python models/other_sources.py OUT_DIR

OUT_DIR/
  tf2_savedmodel/      tf.saved_model.save of a tf.Module: signature input key renamed to
                       `inputs`, outputs `probabilities` and `classes`, a tf.cond on a training
                       flag (control flow v2) and dropout inside
  tf1_savedmodel/      SavedModelBuilder of a TF1 graph (ref variables, keep_prob flag), signature
                       `image` -> `probabilities`
  model.keras          Keras 3 functional model: input `image`, output `probabilities`
  custom.keras         Keras 3 model with a custom layer (needs --custom-objects
                       other_sources:Scale)
  model.h5             tf_keras model (BatchNorm, Dropout): input `image`, output `probabilities`
  pruned.h5            the same wrapped for pruning by tensorflow-model-optimization
  clustered.h5         the same wrapped for weight clustering by tensorflow-model-optimization
  qat.h5               a Dense model wrapped for quantization-aware training (fake-quant ops)
  lambda.h5            tf_keras model with a Lambda layer (refused without --unsafe)
  frozen.pb            what freeze_graph makes of a TF1 graph (Identity chains, dropout flag)
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1


def tf2_savedmodel(out: str) -> None:
    class Classifier(tf.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.w1 = tf.Variable(rng.standard_normal((4, 16)).astype(np.float32), name="w1")
            self.b1 = tf.Variable(np.zeros(16, np.float32), name="b1")
            self.w2 = tf.Variable(rng.standard_normal((16, 3)).astype(np.float32), name="w2")

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            h = tf.nn.relu(tf.matmul(x, self.w1) + self.b1)
            training = tf.constant(False)
            h = tf.cond(training, lambda: tf.nn.dropout(h, rate=0.5), lambda: h)
            probs = tf.nn.softmax(tf.matmul(h, self.w2))
            return {"probabilities": probs, "classes": tf.argmax(probs, axis=1)}

    module = Classifier()
    # The signature's input key is `inputs`, though the function's argument is `x`.
    concrete = module.serve.get_concrete_function()

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="inputs")])
    def serving(inputs):
        return concrete(inputs)

    tf.saved_model.save(module, out, signatures={"serving_default": serving})


def _tf1_dense(input_name: str, output_name: str):
    """A TF1 graph: input -> dropout on a keep_prob flag -> Identity x2 -> dense -> softmax."""
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        x = v1.placeholder(tf.float32, [None, 4], name=input_name)
        keep_prob = v1.placeholder_with_default(1.0, [], name="keep_prob")
        w = v1.get_variable("dense/kernel", [4, 3])
        b = v1.get_variable("dense/bias", [3], initializer=v1.zeros_initializer())
        h = tf.identity(tf.identity(v1.nn.dropout(x, keep_prob=keep_prob)))
        probs = tf.nn.softmax(tf.matmul(h, w) + b, name=output_name)
    return graph, x, probs


def tf1_savedmodel(out: str) -> None:
    graph, image, probs = _tf1_dense("input_image", "softmax")
    with graph.as_default():
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(out)
            signature = v1.saved_model.predict_signature_def(
                inputs={"image": image}, outputs={"probabilities": probs})
            builder.add_meta_graph_and_variables(sess, ["serve"],
                                                 signature_def_map={"serving_default": signature})
            builder.save()


def keras3_models(out: str) -> None:
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((8,), name="image")
    h = keras.layers.Dense(16, activation="relu")(inputs)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.Dropout(0.5)(h)
    outputs = keras.layers.Dense(3, activation="softmax", name="probabilities")(h)
    keras.Model(inputs, outputs).save(os.path.join(out, "model.keras"))

    inputs = keras.Input((8,), name="image")
    outputs = keras.layers.Dense(3, name="probabilities")(Scale()(inputs))
    keras.Model(inputs, outputs).save(os.path.join(out, "custom.keras"))


def _scale_class():
    import keras

    class Scale(keras.layers.Layer):
        """A custom layer: loading a model with it needs --custom-objects."""

        def call(self, x):
            return x * 2.0

    return Scale


try:  # importable as other_sources:Scale for --custom-objects
    Scale = _scale_class()
except ImportError:  # pragma: no cover
    Scale = None


def tf_keras_models(out: str) -> None:
    import tensorflow_model_optimization as tfmot
    import tf_keras

    tf_keras.utils.set_random_seed(0)

    def base():
        inputs = tf_keras.Input((8,), name="image")
        h = tf_keras.layers.Dense(16, activation="relu")(inputs)
        h = tf_keras.layers.BatchNormalization()(h)
        h = tf_keras.layers.Dropout(0.5)(h)
        outputs = tf_keras.layers.Dense(3, activation="softmax", name="probabilities")(h)
        return tf_keras.Model(inputs, outputs)

    def base_plain():  # what quantization-aware training supports (no BatchNorm after Dense)
        inputs = tf_keras.Input((8,), name="image")
        h = tf_keras.layers.Dense(16, activation="relu")(inputs)
        outputs = tf_keras.layers.Dense(3, activation="softmax", name="probabilities")(h)
        return tf_keras.Model(inputs, outputs)

    base().save(os.path.join(out, "model.h5"))
    pruned = tfmot.sparsity.keras.prune_low_magnitude(base())
    pruned.save(os.path.join(out, "pruned.h5"))
    clustered = tfmot.clustering.keras.cluster_weights(
        base(), number_of_clusters=4,
        cluster_centroids_init=tfmot.clustering.keras.CentroidInitialization.LINEAR)
    clustered.save(os.path.join(out, "clustered.h5"))
    quantized = tfmot.quantization.keras.quantize_model(base_plain())
    quantized.save(os.path.join(out, "qat.h5"))
    inputs = tf_keras.Input((8,), name="image")
    outputs = tf_keras.layers.Lambda(lambda t: t * 2.0, name="double")(inputs)
    tf_keras.Model(inputs, outputs).save(os.path.join(out, "lambda.h5"))


def frozen_pb(out: str) -> None:
    graph, _, _ = _tf1_dense("x", "probs")
    with graph.as_default():
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            frozen = v1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), ["probs"])
    with open(os.path.join(out, "frozen.pb"), "wb") as f:
        f.write(frozen.SerializeToString())


def build_all(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    tf2_savedmodel(os.path.join(out, "tf2_savedmodel"))
    tf1_savedmodel(os.path.join(out, "tf1_savedmodel"))
    keras3_models(out)
    tf_keras_models(out)
    frozen_pb(out)


if __name__ == "__main__":
    build_all(sys.argv[1])
    print(sys.argv[1])
