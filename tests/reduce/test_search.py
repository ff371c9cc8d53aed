"""The search (reduce/search.py) on real GraphDefs cut by reduce/cut.py, against a stand-in
for a converter that refuses one op type: each trial is a subgraph, and the answer is the
smallest one that still holds the op, found in few trials."""

from __future__ import annotations

import tensorflow as tf
from graphfreeze.reduce.cut import Graph
from graphfreeze.reduce.search import Search


def chain(length: int, bad_at: int):
    """x -> `length` ops (Relu, Tanh, Add with a branch every 10th) -> y; op `length` is
    Erfinv at position `bad_at`."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        h = v1.placeholder(tf.float32, [None, 4], name="x")
        skip = h
        for i in range(length):
            if i == bad_at:
                h = tf.math.erfinv(tf.tanh(h), name=f"bad{i}")
            elif i % 10 == 9:
                h, skip = tf.add(h, skip, name=f"add{i}"), h
            else:
                h = tf.nn.relu(h + 0.1, name=f"relu{i}")
        tf.identity(h, name="y")
    return graph.as_graph_def()


def refuses(op: str, graph: Graph, trials: list):
    def fails(outputs, cuts) -> bool:
        sub = graph.subgraph(outputs, cuts)
        trials.append(len(sub.node))
        tf.graph_util.import_graph_def(sub, name="")  # every subgraph is a valid graph
        return any(n.op == op for n in sub.node)

    return fails


def test_a_deep_op_alone_is_found_in_few_trials():
    graph, trials = Graph.of(chain(300, bad_at=211)), []
    with tf.Graph().as_default():
        outputs, cuts = Search(graph, refuses("Erfinv", graph, trials)).run(("y",))
    sub = graph.subgraph(outputs, cuts)
    ops = sorted(n.op for n in sub.node)
    assert "Erfinv" in ops and len(sub.node) <= 3, ops
    assert len(trials) <= 30, trials  # bisection, not one trial per node


def test_the_error_s_node_is_tried_first():
    graph, trials = Graph.of(chain(100, bad_at=40)), []
    with tf.Graph().as_default():
        outputs, cuts = Search(graph, refuses("Erfinv", graph, trials)).run(("y",),
                                                                            hints=["bad40/Erfinv"])
    assert outputs == ("bad40/Erfinv",) and len(trials) <= 4, trials
