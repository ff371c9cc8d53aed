import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.dropout import remove_dropout

v1 = tf.compat.v1


@pytest.mark.parametrize("form", ["rate", "keep_prob_tensor", "stateless"])
def test_every_dropout_form_becomes_identity(build, run, form):
    def model():
        x = v1.placeholder(tf.float32, [None, 8], name="x")
        h = tf.nn.relu(x)
        if form == "rate":
            h = tf.nn.dropout(h, rate=0.5)
        elif form == "keep_prob_tensor":
            h = v1.nn.dropout(h, keep_prob=v1.placeholder_with_default(0.5, [], name="kp"))
        else:
            h = tf.nn.experimental.stateless_dropout(h, rate=0.3, seed=[1, 2])
        tf.identity(h * 3.0, name="y")

    graph = build(model)
    stripped, removed = remove_dropout(graph, ["y", "x"])
    assert len(removed) == 1
    assert not any("Random" in op for op in op_counts(stripped)), op_counts(stripped)
    x = np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)
    np.testing.assert_allclose(run(stripped, {"x:0": x}, "y:0"), np.maximum(x, 0) * 3.0)


def test_plain_multiply_is_not_dropout(build):
    def model():
        x = v1.placeholder(tf.float32, [4], name="x")
        tf.multiply(x, tf.random.uniform([4]), name="y")  # noise, but no mask: leave it

    graph = build(model)
    assert remove_dropout(graph, ["y", "x"]) == (graph, [])


def test_a_scale_judged_once_per_node_however_it_branches():
    """A scale 64 Subs deep, each reading the one below twice (2**64 paths, judged node by
    node, no recursion), and a 5,000-Cast chain (deeper than Python's recursion limit)."""
    from graphfreeze.graph.passes.dropout import _is_scalar_factor
    from graphfreeze.proto.tf import graph_pb2

    graph = graph_pb2.GraphDef()
    graph.node.add(name="s0", op="Const").attr["value"].tensor.dtype = 1
    for i in range(1, 65):
        graph.node.add(name=f"s{i}", op="Sub", input=[f"s{i - 1}", f"s{i - 1}"])
    for i in range(5_000):
        graph.node.add(name=f"c{i}", op="Cast", input=[f"c{i - 1}" if i else "s64"])
    by_name = {n.name: n for n in graph.node}
    assert _is_scalar_factor(by_name, "s64") and _is_scalar_factor(by_name, "c4999:0")
    graph.node.add(name="x", op="Placeholder")
    by_name["s1"].input[1] = "x"  # a tensor under it: not a scale
    assert not _is_scalar_factor(by_name, "c4999")
