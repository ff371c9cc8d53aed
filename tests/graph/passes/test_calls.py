import numpy as np
import tensorflow as tf
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.calls import inline_calls

v1 = tf.compat.v1


def test_function_calls_are_inlined(build, run):
    @tf.function
    def double(t):
        return t * 2.0

    def model():
        x = v1.placeholder(tf.float32, [3], name="x")
        tf.identity(double(x), name="y")

    graph = build(model)
    assert "StatefulPartitionedCall" in op_counts(graph) or "PartitionedCall" in op_counts(graph)
    inlined, changed = inline_calls(graph, ["y", "x"])
    assert changed
    assert not {"PartitionedCall", "StatefulPartitionedCall"} & set(op_counts(inlined))
    np.testing.assert_allclose(run(inlined, {"x:0": [1, 2, 3]}, "y:0"), [2, 4, 6])
