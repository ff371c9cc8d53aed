"""Build 24 small models of mixed kinds for `freeze batch` (seeded, no downloads, one process).

    python models/batch_models.py OUT                      # all 24, and OUT/models.toml
    python models/batch_models.py OUT --only NAME --seed 7  # rebuild one (other weights)

OUT/
  ckpt/NAME/model.ckpt-200      8 TF1 Saver checkpoints, given to the batch by prefix (+ .meta):
                                iris DNNs (models/iris_dnn.py: ref/resource/partitioned
                                variables, sharded, batch norm cond v1/v2, dropout kinds; trained
                                on differently seeded data) and tf_keras CNNs (models/small_cnn.py)
  model_dir/NAME/               6 Estimator-style model_dirs: a `checkpoint` state file, two
                                checkpoints for the iris ones (steps 100 and 200, the state names
                                the latest), graph.pbtxt
  saved_model/NAME/             5 SavedModels: TF2 (tf.saved_model.save) x3, TF1
                                (SavedModelBuilder) x2; models/other_sources.py's and wider ones
  keras/NAME.keras, NAME.h5     5 Keras files: Keras 3 x2, tf_keras x3 (one pruning-wrapped)
  models.toml                   a manifest converting all 24 to `android`; checkpoints and
                                model_dirs with outputs = ["probs"]

`MODELS` (name, kind, source relative to OUT, outputs) is importable without TensorFlow.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import dataclass

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Model:
    name: str
    kind: str  # checkpoint | model_dir | saved_model | keras
    source: str  # relative to OUT
    outputs: tuple[str, ...] = ()
    recipe: tuple = ()  # (builder, keyword arguments) -- see build_one

    @property
    def freeze_graph_able(self) -> bool:
        """What freeze_graph takes: a meta graph and a checkpoint."""
        return self.kind in ("checkpoint", "model_dir")


def _ckpt(name, builder, **kw) -> Model:
    return Model(name, "checkpoint", f"ckpt/{name}/model.ckpt-200", ("probs",), (builder, kw))


def _model_dir(name, builder, **kw) -> Model:
    return Model(name, "model_dir", f"model_dir/{name}", ("probs",), (builder, kw))


def _saved(name, builder, **kw) -> Model:
    return Model(name, "saved_model", f"saved_model/{name}", (), (builder, kw))


def _keras(name, suffix, builder, **kw) -> Model:
    return Model(name, "keras", f"keras/{name}{suffix}", (), (builder, kw))


MODELS: tuple[Model, ...] = (
    # 8 checkpoints, by prefix
    _ckpt("iris_ref", "iris", seed=0),
    _ckpt("iris_resource_bn", "iris", seed=1, variables="resource", dropout="baked",
          batchnorm=True, control_flow="v2"),
    _ckpt("iris_partitioned", "iris", seed=2, variables="partitioned", sharded=True,
          batchnorm=True, control_flow="v1"),
    _ckpt("iris_nodropout", "iris", seed=3, dropout="none"),
    _ckpt("iris_bn_v1", "iris", seed=4, batchnorm=True, control_flow="v1"),
    _ckpt("iris_sharded", "iris", seed=5, variables="resource", sharded=True),
    _ckpt("cnn_v1", "cnn", steps=5, control_flow="v1"),
    _ckpt("cnn_v2", "cnn", steps=3, control_flow="v2"),
    # 6 Estimator-style model_dirs
    _model_dir("md_iris_a", "iris", seed=10, estimator=True),
    _model_dir("md_iris_b", "iris", seed=11, estimator=True, variables="resource"),
    _model_dir("md_iris_c", "iris", seed=12, estimator=True, variables="resource",
               dropout="baked", batchnorm=True),
    _model_dir("md_iris_d", "iris", seed=13, estimator=True, variables="partitioned"),
    _model_dir("md_cnn_v1", "cnn", steps=2, control_flow="v1"),
    _model_dir("md_cnn_v2", "cnn", steps=4, control_flow="v2"),
    # 5 SavedModels
    _saved("sm_tf2_base", "tf2_base"),
    _saved("sm_tf2_w32", "tf2", width=32, seed=1),
    _saved("sm_tf2_w64", "tf2", width=64, seed=2),
    _saved("sm_tf1_base", "tf1_base"),
    _saved("sm_tf1_w24", "tf1", width=24, seed=3),
    # 5 Keras files
    _keras("k3_base", ".keras", "keras3_base"),
    _keras("k3_w32", ".keras", "keras3", width=32, seed=1),
    _keras("tfk_base", ".h5", "tf_keras_base"),
    _keras("tfk_pruned", ".h5", "tf_keras_pruned"),
    _keras("tfk_w48", ".h5", "tf_keras", width=48, seed=2),
)


def manifest(models, out_dir: str = "dist", targets=("android",)) -> str:
    """models.toml text converting `models` (sources relative to the manifest's folder)."""
    quoted = ", ".join(f'"{t}"' for t in targets)
    lines = ["# Written by models/batch_models.py.", "schema_version = 1", "",
             "[defaults]", f"targets = [{quoted}]", f'out_dir = "{out_dir}"']
    for model in models:
        lines += ["", "[[model]]", f'name = "{model.name}"', f'source = "{model.source}"']
        if model.outputs:
            lines.append("outputs = [" + ", ".join(f'"{o}"' for o in model.outputs) + "]")
    return "\n".join(lines) + "\n"


# -- builders (TensorFlow imported only here) ----------------------------------------------------

def _iris(out: str, seed: int = 0, estimator: bool = False, **kw) -> None:
    import functools

    import iris_dnn

    original = iris_dnn.synthetic_iris
    iris_dnn.synthetic_iris = functools.partial(original, seed=seed)  # other data, other weights
    try:
        if estimator:  # training went on: an older checkpoint stays beside the latest
            iris_dnn.build(out, steps=100, **kw)
        prefix = iris_dnn.build(out, steps=200, **kw)
    finally:
        iris_dnn.synthetic_iris = original
    if estimator:
        _graph_pbtxt(out, prefix)


def _cnn(out: str, steps: int = 5, control_flow: str = "v2", estimator: bool = False) -> None:
    import small_cnn

    prefix = small_cnn.build(out, control_flow=control_flow, steps=steps)
    if estimator:
        _graph_pbtxt(out, prefix)


def _graph_pbtxt(out: str, prefix: str) -> None:
    """graph.pbtxt as an Estimator writes it (the graph of the meta graph, as text)."""
    import tensorflow as tf

    meta = tf.compat.v1.MetaGraphDef()
    with open(prefix + ".meta", "rb") as f:
        meta.ParseFromString(f.read())
    tf.io.write_graph(meta.graph_def, out, "graph.pbtxt", as_text=True)


def _tf2(out: str, width: int, seed: int) -> None:
    """A TF2 tf.Module: `inputs` [?, 4] -> dense(width) -> relu -> dense(3) -> `probabilities`."""
    import numpy as np
    import tensorflow as tf

    class Classifier(tf.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(seed)
            self.w1 = tf.Variable(rng.standard_normal((4, width)).astype(np.float32), name="w1")
            self.b1 = tf.Variable(rng.standard_normal(width).astype(np.float32), name="b1")
            self.w2 = tf.Variable(rng.standard_normal((width, 3)).astype(np.float32), name="w2")

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="inputs")])
        def serve(self, inputs):
            h = tf.nn.relu(tf.matmul(inputs, self.w1) + self.b1)
            return {"probabilities": tf.nn.softmax(tf.matmul(h, self.w2))}

    module = Classifier()
    tf.saved_model.save(module, out, signatures={"serving_default": module.serve})


def _tf1(out: str, width: int, seed: int) -> None:
    """A TF1 SavedModelBuilder graph: `image` [?, 4] -> dense(width) -> dropout flag -> dense(3)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(seed)
        x = v1.placeholder(tf.float32, [None, 4], name="input_image")
        keep_prob = v1.placeholder_with_default(1.0, [], name="keep_prob")
        w1 = v1.get_variable("hidden/kernel", [4, width])
        b1 = v1.get_variable("hidden/bias", [width], initializer=v1.random_normal_initializer())
        h = v1.nn.dropout(tf.nn.relu(tf.matmul(x, w1) + b1), keep_prob=keep_prob)
        w2 = v1.get_variable("out/kernel", [width, 3])
        probs = tf.nn.softmax(tf.matmul(h, w2), name="softmax")
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(out)
            signature = v1.saved_model.predict_signature_def(
                inputs={"image": x}, outputs={"probabilities": probs})
            builder.add_meta_graph_and_variables(sess, ["serve"],
                                                 signature_def_map={"serving_default": signature})
            builder.save()


def _keras3(out: str, width: int, seed: int) -> None:
    import keras

    keras.utils.set_random_seed(seed)
    inputs = keras.Input((8,), name="image")
    h = keras.layers.Dense(width, activation="relu")(inputs)
    h = keras.layers.BatchNormalization()(h)
    outputs = keras.layers.Dense(3, activation="softmax", name="probabilities")(h)
    keras.Model(inputs, outputs).save(out)


def _tf_keras(out: str, width: int, seed: int) -> None:
    import tf_keras

    tf_keras.utils.set_random_seed(seed)
    inputs = tf_keras.Input((8,), name="image")
    h = tf_keras.layers.Dense(width, activation="relu")(inputs)
    h = tf_keras.layers.Dropout(0.3)(h)
    outputs = tf_keras.layers.Dense(3, activation="softmax", name="probabilities")(h)
    tf_keras.Model(inputs, outputs).save(out)


def _from_other_sources(out: str, builder: str, produced: str) -> None:
    """One file of what models/other_sources.py's `builder` writes (the rest discarded)."""
    import other_sources

    scratch = out + ".scratch"
    os.makedirs(scratch, exist_ok=True)
    try:
        getattr(other_sources, builder)(scratch)
        shutil.move(os.path.join(scratch, produced), out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def build_one(model: Model, out: str, seed: int | None = None) -> None:
    """Build `model` under OUT (replacing what is there); `seed` overrides the recipe's."""
    builder, kw = model.recipe
    kw = dict(kw)
    if seed is not None:
        if builder == "cnn":
            kw["steps"] = kw.get("steps", 5) + seed  # small_cnn's data seed is fixed
        elif "seed" in kw or builder in ("iris", "tf2", "tf1", "keras3", "tf_keras"):
            kw["seed"] = seed
        else:
            raise SystemExit(f"{model.name}: built by models/other_sources.py, no seed to vary")
    if model.kind == "model_dir" and builder == "cnn":
        kw["estimator"] = True
    path = os.path.join(out, model.source)
    target = os.path.dirname(path) if model.kind == "checkpoint" else path
    if os.path.isdir(target):
        shutil.rmtree(target)
    elif os.path.exists(target):
        os.remove(target)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if builder == "iris":
        _iris(target, **kw)
    elif builder == "cnn":
        _cnn(target, **kw)
    elif builder == "tf2":
        _tf2(target, **kw)
    elif builder == "tf1":
        _tf1(target, **kw)
    elif builder == "keras3":
        _keras3(target, **kw)
    elif builder == "tf_keras":
        _tf_keras(target, **kw)
    elif builder == "tf2_base":
        import other_sources

        other_sources.tf2_savedmodel(target)
    elif builder == "tf1_base":
        import other_sources

        other_sources.tf1_savedmodel(target)
    elif builder == "keras3_base":
        _from_other_sources(target, "keras3_models", "model.keras")
    elif builder == "tf_keras_base":
        _from_other_sources(target, "tf_keras_models", "model.h5")
    elif builder == "tf_keras_pruned":
        _from_other_sources(target, "tf_keras_models", "pruned.h5")
    else:
        raise ValueError(builder)
    import tensorflow as tf

    tf.compat.v1.enable_control_flow_v2()  # iris/cnn builders may have turned it off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--only", metavar="NAME", help="rebuild only this model")
    parser.add_argument("--seed", type=int, help="with --only: another seed (other weights)")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    by_name = {m.name: m for m in MODELS}
    if args.only and args.only not in by_name:
        parser.error(f"--only {args.only}: not one of {', '.join(by_name)}")
    chosen = [by_name[args.only]] if args.only else list(MODELS)
    os.makedirs(args.out, exist_ok=True)
    for model in chosen:
        build_one(model, args.out, args.seed if args.only else None)
        print(os.path.join(args.out, model.source))
    with open(os.path.join(args.out, "models.toml"), "w") as f:
        f.write(manifest(MODELS))


if __name__ == "__main__":
    main()
