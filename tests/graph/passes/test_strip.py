import numpy as np
import tensorflow as tf
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.builtin import optimize_for_inference, strip_training

v1 = tf.compat.v1


def test_debugging_ops_and_identity_chains_go(build, run):
    def model():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        checked = tf.debugging.check_numerics(x, "x is not finite")
        printed = v1.Print(checked, [checked], "x=")
        assert_op = tf.debugging.Assert(tf.reduce_all(tf.math.is_finite(printed)), [printed])
        with tf.control_dependencies([assert_op]):
            y = tf.identity(tf.identity(tf.stop_gradient(printed * 2.0)))
        v1.summary.scalar("mean", tf.reduce_mean(y))
        tf.identity(y, name="y")

    graph = build(model)
    stripped, _ = strip_training(graph, ["y", "x"], {})
    final = optimize_for_inference(stripped, ["y", "x"])
    assert op_counts(final) == {"Const": 1, "Identity": 1, "Mul": 1, "Placeholder": 1}
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    np.testing.assert_allclose(run(final, {"x:0": x}, "y:0"), x * 2)


def test_canonical_order_is_deterministic(build):
    def model():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        tf.nn.relu(tf.add(x, 1.0, name="b"), name="y")
        tf.add(x, 2.0, name="a")

    graph = build(model)
    shuffled = type(graph)()
    shuffled.CopyFrom(graph)
    shuffled.node.sort(key=lambda n: n.name, reverse=True)
    from graphfreeze.graph.graphdefs import topo_order
    from graphfreeze.graph.serialize import serialize_chunks

    def canonical_bytes(graph_def):
        optimized = optimize_for_inference(graph_def, ["y", "x"])
        return b"".join(serialize_chunks(optimized, topo_order(optimized)))

    assert canonical_bytes(graph) == canonical_bytes(shuffled)
