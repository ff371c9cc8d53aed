"""graph/features: the features a parse op declares and those an Estimator's iterator hands
its feature columns, by key (real TensorFlow graphs: built here, or the checked-in model_dir
TF 2.15's Estimator wrote)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tensorflow as tf
from graphfreeze.graph.features import iterator_keys, parse_refusal_hint, parse_spec
from graphfreeze.graph.graphdefs import nodes_by_name

v1 = tf.compat.v1
MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "estimators" / "dnn" / "model_dir"


def _spec(build) -> dict:
    graph = tf.Graph()
    with graph.as_default():
        build(v1.placeholder(tf.string, [None], name="examples"))
    graph_def = graph.as_graph_def()
    by_name = nodes_by_name(graph_def)
    (parser,) = [n for n in graph_def.node if n.op.startswith("Parse")]
    return {f.key: f for f in parse_spec(by_name, parser)}


FEATURES = {"age": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.0, 0.0]),
            "color": tf.io.VarLenFeature(tf.string),
            "ids": tf.io.RaggedFeature(tf.int64)}


@pytest.mark.parametrize("build", [
    lambda examples: tf.io.parse_example(examples, FEATURES),
    lambda examples: tf.io.parse_single_example(examples[0], {
        k: f for k, f in FEATURES.items() if k != "ids"}),
], ids=["parse_example", "parse_single_example"])
def test_a_parse_ops_features_by_key_kind_and_outputs(build):
    spec = _spec(build)
    assert spec["age"].kind == "dense" and spec["age"].shape == (2,)
    assert spec["age"].dtype == tf.float32.as_datatype_enum
    assert spec["color"].kind == "sparse" and spec["color"].dtype == tf.string.as_datatype_enum
    assert sorted(n for n, _ in spec["color"].parts) == \
        ["color", "color/dense_shape", "color/indices"]
    if "ids" in spec:
        assert [n for n, _ in spec["ids"].parts] == ["ids", "ids/row_splits"]
    outputs = [i for f in spec.values() for _, i in f.parts]
    assert sorted(outputs) == list(range(len(outputs)))  # each output one feature's part


def test_a_sequence_examples_context_and_feature_lists():
    spec = _spec(lambda examples: tf.io.parse_sequence_example(
        examples, context_features={"user": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"clicks": tf.io.FixedLenSequenceFeature([], tf.int64)}))
    assert not spec["user"].sequence and spec["clicks"].sequence
    assert [n for n, _ in spec["clicks"].parts] == ["clicks", "clicks/lengths"]


def test_the_iterators_features_by_the_keys_its_feature_columns_read():
    """age (numeric and bucketized), color (read first by the crossed column's embedding:
    `age_bucketized_X_color_embedding_1`), hours; the label (3) read by no column."""
    from graphfreeze.proto.tf import meta_graph_pb2

    meta = meta_graph_pb2.MetaGraphDef.FromString((MODEL_DIR / "model.ckpt-25.meta").read_bytes())
    assert iterator_keys(meta.graph_def, "IteratorGetNext") == {0: "age", 1: "color", 2: "hours"}


def _iterator_graph(scopes: list[str]):
    graph = tf.Graph()
    with graph.as_default():
        data = tf.data.Dataset.from_tensors(tuple(tf.zeros([1]) for _ in scopes))
        values = v1.data.make_one_shot_iterator(data).get_next()
        for scope, value in zip(scopes, values, strict=True):
            with tf.name_scope(scope):
                tf.identity(value * 2)
    return graph.as_graph_def()


@pytest.mark.parametrize("scopes,keys", [
    (["input_layer/a_1", "input_layer/b_bucketized"], {0: "a", 1: "b"}),
    (["input_layer/b", "input_layer/a"], {}),  # not the dict's (sorted) order: no keys
    (["input_layer/a", "other/b"], {0: "a"}),  # read by no feature column: its output's name
])
def test_iterator_keys_only_when_told_apart_in_order(scopes, keys):
    assert iterator_keys(_iterator_graph(scopes), "IteratorGetNext") == keys


def test_the_refusal_hint_names_the_keys_only_for_a_refused_parse_op():
    graph = tf.Graph()
    with graph.as_default():
        tf.io.parse_example(v1.placeholder(tf.string, [None]), FEATURES)
    graph_def = graph.as_graph_def()
    assert parse_refusal_hint(graph_def, "cannot take op(s) ParseExampleV2, Where").endswith(
        "--inputs age,color,ids")
    assert parse_refusal_hint(graph_def, "cannot take op(s) Where") == ""
