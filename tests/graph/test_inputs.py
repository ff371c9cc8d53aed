"""graph/inputs: a parse op's features as nodes named by their keys; an input that is one output
of several split out, then cut to a placeholder (real TensorFlow graphs)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from graphfreeze.graph.inputs import features_as_nodes, inference_subgraph, split_inputs
from graphfreeze.names import TensorRef

v1 = tf.compat.v1


def _parsing_graph():
    graph = tf.Graph()
    with graph.as_default():
        examples = v1.placeholder(tf.string, [None], name="examples")
        parsed = tf.io.parse_example(examples, {"age": tf.io.FixedLenFeature([1], tf.float32),
                                                "color": tf.io.VarLenFeature(tf.string)})
        size = tf.cast(tf.size(parsed["color"].values), tf.float32)
        tf.identity(parsed["age"] * 2 + size, name="y")
    return graph.as_graph_def()


def _run(graph_def, feeds):
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    with v1.Session(graph=graph) as sess:
        return sess.run("y:0", feeds)


def test_features_are_nodes_named_by_their_keys_and_compute_the_same():
    graph = _parsing_graph()
    named = features_as_nodes(graph)
    nodes = {n.name for n in named.node}
    assert {"age", "color", "color/indices", "color/dense_shape"} <= nodes
    example = tf.train.Example(features=tf.train.Features(feature={
        "age": tf.train.Feature(float_list=tf.train.FloatList(value=[3.0])),
        "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"red", b"blue"]))}))
    feeds = {"examples:0": [example.SerializeToString()]}
    np.testing.assert_allclose(_run(named, feeds), _run(graph, feeds))


def test_a_sparse_feature_brings_its_parts_and_the_cut_parses_nothing():
    named = features_as_nodes(_parsing_graph())
    graph, refs = split_inputs(named, [TensorRef("age"), TensorRef("color")])
    assert [r.node for r in refs] == ["age", "color", "color/indices", "color/dense_shape"]
    cut = inference_subgraph(graph, ["y", *(r.node for r in refs)], refs)
    assert not [n.op for n in cut.node if n.op.startswith("ParseExample")]
    feeds = {"age:0": [[3.0]], "color:0": [b"red", b"blue"], "color/indices:0": [[0, 0], [0, 1]],
             "color/dense_shape:0": [1, 2]}
    np.testing.assert_allclose(_run(cut, feeds), [[8.0]])


def test_a_single_example_and_a_sequence_examples_features_by_key():
    """ParseSingleExample's features, and a SequenceExample's context and feature list (its
    lengths brought along), cut to inputs by their keys as ParseExample's are."""
    graph = tf.Graph()
    with graph.as_default():
        example = v1.placeholder(tf.string, [], name="example")
        single = tf.io.parse_single_example(example, {"age": tf.io.FixedLenFeature([1],
                                                                                 tf.float32)})
        context, lists, lengths = tf.io.parse_sequence_example(
            v1.placeholder(tf.string, [None], name="sequences"),
            context_features={"user": tf.io.FixedLenFeature([], tf.float32)},
            sequence_features={"clicks": tf.io.FixedLenSequenceFeature([], tf.float32)})
        total = tf.reduce_sum(lists["clicks"]) + tf.reduce_sum(context["user"])
        tf.identity(single["age"][0] + total + tf.cast(tf.reduce_sum(lengths["clicks"]),
                                                       tf.float32), name="y")
    named = features_as_nodes(graph.as_graph_def())
    graph, refs = split_inputs(named, [TensorRef("age"), TensorRef("user"), TensorRef("clicks")])
    assert [r.node for r in refs] == ["age", "user", "clicks", "clicks/lengths"]
    cut = inference_subgraph(graph, ["y", *(r.node for r in refs)], refs)
    assert not [n.op for n in cut.node if n.op.startswith("Parse")]
    feeds = {"age:0": [2.0], "user:0": [1.0], "clicks:0": [[1.0, 2.0]], "clicks/lengths:0": [2]}
    np.testing.assert_allclose(_run(cut, feeds), 8.0)


def test_one_output_of_several_gets_a_node_of_its_own():
    graph = tf.Graph()
    with graph.as_default():
        pair = tf.raw_ops.Unpack(value=v1.placeholder(tf.float32, [2, 3], name="x"), num=2,
                                 name="pair")
        tf.identity(pair[0] - pair[1], name="y")
    graph_def = graph.as_graph_def()
    split, refs = split_inputs(graph_def, [TensorRef("pair", 0), TensorRef("pair", 1)])
    assert [r.name for r in refs] == ["pair/output_0:0", "pair/output_1:0"]
    cut = inference_subgraph(split, ["y", *(r.node for r in refs)], refs)
    ops = {n.name: n.op for n in cut.node}
    assert ops["pair/output_0"] == ops["pair/output_1"] == "Placeholder" and "x" not in ops
    np.testing.assert_allclose(_run(cut, {"pair/output_0:0": [1.0] * 3,
                                          "pair/output_1:0": [0.5] * 3}), [0.5] * 3)
