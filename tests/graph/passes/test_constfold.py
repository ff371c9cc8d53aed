import numpy as np
import tensorflow as tf
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.constfold import fold_constants

from tests.peak_rss import growth_kib

v1 = tf.compat.v1


def test_folds_constant_subgraphs_and_keeps_names(build, run):
    def model():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
        scaled = tf.multiply(w, 2.0, name="scaled")
        tf.identity(tf.matmul(x, tf.transpose(tf.transpose(scaled))), name="y")

    graph = build(model)
    folded = fold_constants(graph, ["y", "x"]).graph_def
    ops = op_counts(folded)
    assert ops == {"Const": 1, "Identity": 1, "MatMul": 1, "Placeholder": 1}
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(run(folded, {"x:0": x}, "y:0"), run(graph, {"x:0": x}, "y:0"))


def test_leaves_stateful_and_placeholder_paths(build):
    def model():
        x = v1.placeholder(tf.float32, [2], name="x")
        noise = tf.random.uniform([2], name="noise")
        tf.add(x, noise, name="y")

    folded = fold_constants(build(model), ["y", "x"]).graph_def
    assert "RandomUniform" in op_counts(folded)


def test_const_in_a_cond_frame_is_not_folded_free(build):
    v1.disable_control_flow_v2()
    try:
        def model():
            p = v1.placeholder(tf.bool, [], name="p")
            tf.identity(v1.cond(p, lambda: tf.constant(1.0) * 2, lambda: tf.constant(3.0)),
                        name="y")

        graph = build(model)
    finally:
        v1.enable_control_flow_v2()
    folded = fold_constants(graph, ["y", "p"]).graph_def
    assert "Merge" in op_counts(folded) and "Switch" in op_counts(folded)


def test_huge_results_stay_ops_and_are_never_computed(build, run):
    """A 16 TiB Fill (and what reads it) is judged by its static shape, not evaluated."""

    def model():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        huge = tf.fill(tf.constant([2**40, 4], tf.int64), 1.0, name="huge")
        big = tf.fill([3000, 3000], 2.0, name="big")  # 36 MB from a scalar: grows too much
        small = tf.reduce_sum(tf.fill([2, 3], 0.5), axis=0, name="small")  # folds
        tf.identity(x * small + 0.0 * tf.reduce_sum(huge) + tf.reduce_max(big), name="y")

    graph = build(model)
    with growth_kib() as grown:
        folded = fold_constants(graph, ["y", "x"]).graph_def
    assert grown() < 200_000
    nodes = {n.name: n.op for n in folded.node}
    assert nodes["huge"] == "Fill" and nodes["big"] == "Fill" and nodes["small"] == "Const"
    np.testing.assert_allclose(folded_value(folded, "small"), [1.0, 1.0, 1.0])


def folded_value(graph_def, name):
    from tensorflow.python.framework import tensor_util

    node = next(n for n in graph_def.node if n.name == name)
    return tensor_util.MakeNdarray(node.attr["value"].tensor)


def test_handles_stay_ops_values_around_them_fold(build, run):
    """A TensorList built from constants (a variant, as Keras 3 RNNs make) has no value to keep
    as a Const: it stays an op, and the graph still runs."""
    def model():
        x = v1.placeholder(tf.float32, [2], name="x")
        shape = tf.add(tf.constant([1]), 1, name="elem_shape")
        handle = tf.raw_ops.TensorListReserve(element_shape=shape, num_elements=3,
                                              element_dtype=tf.float32, name="reserve")
        handle = tf.raw_ops.TensorListSetItem(input_handle=handle, index=0, item=x)
        tf.identity(tf.raw_ops.TensorListStack(input_handle=handle, element_shape=[2],
                                               element_dtype=tf.float32), name="y")

    graph = build(model)
    folded = fold_constants(graph, ["y", "x"]).graph_def
    ops = op_counts(folded)
    assert ops["TensorListReserve"] == 1 and "AddV2" not in ops
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(run(folded, {"x:0": x}, "y:0"), run(graph, {"x:0": x}, "y:0"))


def test_a_fold_that_fails_as_it_runs_folds_nothing(build, run):
    """Integer division by zero, made of constants: the graph is left to fail as it runs (the
    reference run names the node), never an error of the pass."""
    def model():
        x = v1.placeholder(tf.int32, [None, 2], name="x")
        ok = tf.add(tf.constant([1, 2]), 1, name="ok")
        bad = tf.math.floordiv(tf.constant([1, 2]), tf.constant([0, 1]), name="bad")
        tf.identity(x + ok + bad, name="y")

    graph = build(model)
    folded = fold_constants(graph, ["y", "x"]).graph_def
    nodes = {n.name: n.op for n in folded.node}
    assert nodes["bad"] == "FloorDiv" and nodes["ok"] == "AddV2"



def test_a_node_waiting_for_one_that_stays_stays_too(build):
    """A control edge to a node too big to fold keeps its waiter an op (as before the fold moved
    to the child, where the edge is not in the graph it sizes)."""
    def model():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        big = tf.fill(tf.constant([1 << 20, 1 << 10], tf.int64), 1.0, name="big")
        waits = tf.add(tf.constant(1.0), 1.0, name="waits")
        tf.identity(x * waits + 0.0 * tf.reduce_sum(big), name="y")

    graph = build(model)
    next(n for n in graph.node if n.name == "waits").input.append("^big")
    folded = fold_constants(graph, ["y", "x"]).graph_def
    nodes = {n.name: n for n in folded.node}
    assert nodes["waits"].op == "AddV2" and "^big" in nodes["waits"].input


def test_colocated_constants_fold(build, run):
    """A `_class` colocation naming a node outside the folded part does not fail the fold."""
    def model():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        with tf.compat.v1.colocate_with(x):
            c = tf.add(tf.constant([1.0, 2.0, 3.0]), 1.0, name="c")
        tf.identity(x * c, name="y")

    graph = build(model)
    assert any("_class" in n.attr for n in graph.node if n.name == "c")
    folded = fold_constants(graph, ["y", "x"]).graph_def
    assert {n.name: n.op for n in folded.node}["c"] == "Const"
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(run(folded, {"x:0": x}, "y:0"), run(graph, {"x:0": x}, "y:0"))


def test_string_values_fold_where_the_python_session_runs_them(build, run):
    """A string result is fetched by TensorFlow's Python session (the C API takes numbers
    only), as `node:0`: a bare node name would fetch the op, whose value is None."""
    def model():
        x = v1.placeholder(tf.string, [None], name="x")
        tail = tf.strings.join([tf.constant("a"), tf.constant("b")], name="tail")
        tf.strings.join([x, tail], name="y")

    graph = build(model)
    folded = fold_constants(graph, ["y", "x"]).graph_def
    assert {n.name: n.op for n in folded.node}["tail"] == "Const"
    x = np.array([b"x", b"y"])
    assert list(run(folded, {"x:0": x}, "y:0")) == list(run(graph, {"x:0": x}, "y:0"))
