"""data/examples: seeded serialized tf.Examples that a real parse op parses, each feature of the
kind it declares and drawn from its own domain (a vocabulary's keys); a parsed sparse
feature's indices and dense shape that agree (TensorFlow runs both)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.data.domains import domains
from graphfreeze.errors import InputError
from graphfreeze.tensors import TensorInfo, sample_inputs

v1 = tf.compat.v1
COLORS = ["red", "green", "blue"]
FEATURES = {"age": tf.io.FixedLenFeature([2], tf.float32),
            "color": tf.io.VarLenFeature(tf.string),
            "count": tf.io.FixedLenFeature([], tf.int64),
            "ids": tf.io.RaggedFeature(tf.int64)}


def _run(graph, fetch: str, feeds: dict):
    with v1.Session(graph=graph) as sess:
        sess.run(v1.tables_initializer())
        return sess.run(fetch, feeds)


def _parsing(single: bool = False):
    """examples -> parse (a batch, or one example) -> color looked up in a vocabulary."""
    graph = tf.Graph()
    with graph.as_default():
        examples = v1.placeholder(tf.string, [] if single else [None], name="examples")
        spec = {k: f for k, f in FEATURES.items() if not single or k != "ids"}
        parsed = tf.io.parse_single_example(examples, spec) if single else \
            tf.io.parse_example(examples, spec)
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            COLORS, list(range(len(COLORS))), value_dtype=tf.int64), -1)
        tf.identity(table.lookup(parsed["color"].values), name="color_ids")
    return graph


@pytest.mark.parametrize("single", [False, True], ids=["parse_example", "parse_single_example"])
def test_seeded_examples_parse_and_draw_the_vocabulary(single):
    graph = _parsing(single)
    info = TensorInfo("examples:0", "string", () if single else (None,))
    found = domains(graph.as_graph_def(), [info])["examples:0"]
    assert {f.key for f, _ in found.examples} == set(FEATURES) - ({"ids"} if single else set())
    color = next(d for f, d in found.examples if f.key == "color")
    assert set(color.keys) == {c.encode() for c in COLORS}
    feeds = sample_inputs([info], 6, seed=0, domains={"examples:0": found})
    ids = _run(graph, "color_ids:0", feeds)  # parses (was: 'Could not parse example input')
    assert len(ids) >= (1 if single else 6)


def test_a_parsed_sparse_features_parts_agree_and_index_its_values():
    graph = tf.Graph()
    with graph.as_default():
        values = v1.placeholder(tf.string, [None], name="color")
        indices = v1.placeholder(tf.int64, [None, 2], name="color/indices")
        shape = v1.placeholder(tf.int64, [2], name="color/dense_shape")
        tf.identity(tf.sparse.to_dense(tf.SparseTensor(indices, values, shape), ""), name="y")
    infos = [TensorInfo("color:0", "string", (None,)),
             TensorInfo("color/indices:0", "int64", (None, 2)),
             TensorInfo("color/dense_shape:0", "int64", (2,))]
    found = domains(graph.as_graph_def(), infos)
    assert found["color/indices:0"].sparse_of == "color:0"
    feeds = sample_inputs(infos, 4, seed=0, domains=found)
    dense = _run(graph, "y:0", feeds)
    assert dense.shape[0] == 4 and len(feeds["color:0"]) == len(feeds["color/indices:0"])
    assert np.all(dense[:, 0] != b"")  # each example one value at least


def test_a_sparse_feature_of_a_rank_seeded_data_cannot_draw_is_one_line():
    infos = [TensorInfo("x:0", "float32", (None,)), TensorInfo("x/indices:0", "int64", (None, 3)),
             TensorInfo("x/dense_shape:0", "int64", (3,))]
    found = domains(tf.Graph().as_graph_def(), infos)
    with pytest.raises(InputError, match="'x/indices:0'.*--verify-data, or pass --no-verify"):
        sample_inputs(infos, 4, seed=0, domains=found)
