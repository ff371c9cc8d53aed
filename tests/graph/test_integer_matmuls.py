"""float_integer_matmuls on a real graph: an int8 x int8 -> int32 BatchMatMulV3 (as Keras'
quantized Dense computes) gives the same integers computed in float, and no integer product
is left."""

from __future__ import annotations

import numpy as np


def test_integer_matmul_in_float_gives_the_same_integers():
    import tensorflow as tf
    from graphfreeze.graph.integer_matmuls import float_integer_matmuls

    rng = np.random.default_rng(0)
    kernel = rng.integers(-127, 128, (64, 8)).astype(np.int8)
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.int8, [None, 64], name="x")
        product = tf.raw_ops.BatchMatMulV3(x=x, y=tf.constant(kernel), Tout=tf.int32)
        tf.identity(tf.cast(product, tf.float32) * 0.5, name="y")
    rewritten = float_integer_matmuls(graph.as_graph_def())
    ops = {(n.op, n.attr["Ta"].type) for n in rewritten.node if n.op == "BatchMatMulV3"}
    assert ops == {("BatchMatMulV3", tf.float32.as_datatype_enum)}, ops
    feed = rng.integers(-128, 128, (3, 64)).astype(np.int8)
    results = []
    for graph_def in (graph.as_graph_def(), rewritten):
        with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
            tf.graph_util.import_graph_def(graph_def, name="")
            results.append(sess.run("y:0", {"x:0": feed}))
    np.testing.assert_array_equal(results[0], results[1])
    assert float_integer_matmuls(rewritten) is rewritten  # nothing left to rewrite
