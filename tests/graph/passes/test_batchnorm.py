import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.batchnorm import fold_batch_norms
from graphfreeze.graph.passes.constfold import fold_constants

v1 = tf.compat.v1
rng = np.random.default_rng(0)


def stats(c):
    return [tf.constant(rng.uniform(0.5, 2, c).astype(np.float32)),
            tf.constant(rng.normal(size=c).astype(np.float32)),
            tf.constant(rng.normal(size=c).astype(np.float32)),
            tf.constant(rng.uniform(0.5, 2, c).astype(np.float32))]


@pytest.mark.parametrize("layer", ["conv", "depthwise", "conv_bias"])
def test_fused_batch_norm_folds_into_conv(build, run, layer):
    def model():
        x = v1.placeholder(tf.float32, [None, 6, 6, 3], name="x")
        if layer == "depthwise":
            w = tf.constant(rng.normal(size=(3, 3, 3, 2)).astype(np.float32))
            h = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
            c = 6
        else:
            w = tf.constant(rng.normal(size=(3, 3, 3, 4)).astype(np.float32))
            h = tf.nn.conv2d(x, w, 1, "SAME")
            c = 4
            if layer == "conv_bias":
                h = tf.nn.bias_add(h, tf.constant(rng.normal(size=4).astype(np.float32)))
        gamma, beta, mean, var = stats(c)
        y, *_ = tf.raw_ops.FusedBatchNormV3(x=h, scale=gamma, offset=beta, mean=mean,
                                            variance=var, epsilon=1e-3, is_training=False)
        tf.identity(tf.nn.relu(y), name="y")

    graph = build(model)
    folded, changed = fold_batch_norms(graph, ["y", "x"])
    assert changed
    ops = op_counts(folded)
    assert "FusedBatchNormV3" not in ops and ops["BiasAdd"] == 1
    x = rng.normal(size=(2, 6, 6, 3)).astype(np.float32)
    np.testing.assert_allclose(run(folded, {"x:0": x}, "y:0"), run(graph, {"x:0": x}, "y:0"),
                               atol=1e-5)


def test_unfused_batch_norm_after_matmul_folds(build, run):
    def model():
        x = v1.placeholder(tf.float32, [None, 5], name="x")
        h = tf.matmul(x, tf.constant(rng.normal(size=(5, 4)).astype(np.float32)))
        gamma, beta, mean, var = stats(4)
        h = tf.nn.batch_normalization(h, mean, var, beta, gamma, 1e-3)
        tf.identity(h, name="y")

    graph = build(model)
    folded = fold_batch_norms(fold_constants(graph, ["y", "x"]).graph_def, ["y", "x"]).graph_def
    ops = op_counts(folded)
    assert set(ops) == {"BiasAdd", "Const", "Identity", "MatMul", "Placeholder"}, ops
    x = rng.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(run(folded, {"x:0": x}, "y:0"), run(graph, {"x:0": x}, "y:0"),
                               atol=1e-5)


def test_batch_norm_without_a_layer_becomes_mul_add(build, run):
    def model():
        x = v1.placeholder(tf.float32, [None, 4, 4, 2], name="x")
        gamma, beta, mean, var = stats(2)
        y, *_ = tf.raw_ops.FusedBatchNormV3(x=x, scale=gamma, offset=beta, mean=mean,
                                            variance=var, epsilon=1e-3, is_training=False)
        tf.identity(y, name="y")

    graph = build(model)
    folded, changed = fold_batch_norms(graph, ["y", "x"])
    assert changed
    assert "FusedBatchNormV3" not in op_counts(folded)
    x = rng.normal(size=(1, 4, 4, 2)).astype(np.float32)
    np.testing.assert_allclose(run(folded, {"x:0": x}, "y:0"), run(graph, {"x:0": x}, "y:0"),
                               atol=1e-5)


@pytest.mark.parametrize("after,scaled", [("conv", True), ("conv", False), ("relu", True)])
def test_global_normalization_batch_norm_folds(build, run, after, scaled):
    """BatchNormWithGlobalNormalization (graph version 8, as optimize_for_inference's test
    builds it): into the conv's weights, or a Mul and an Add where no layer precedes it; gamma
    applies only with scale_after_normalization."""
    from tensorflow.python.framework import test_util

    def model():
        test_util.set_producer_version(v1.get_default_graph(), 8)
        x = v1.placeholder(tf.float32, [None, 6, 6, 3], name="x")
        h = tf.nn.conv2d(x, tf.constant(rng.normal(size=(3, 3, 3, 4)).astype(np.float32)), 1,
                         "SAME")
        if after == "relu":
            h = tf.nn.relu(h)
        gamma, beta, mean, var = stats(4)
        y = tf.raw_ops.BatchNormWithGlobalNormalization(
            t=h, m=mean, v=var, beta=beta, gamma=gamma, variance_epsilon=1e-3,
            scale_after_normalization=scaled)
        tf.identity(y, name="y")

    graph = build(model)
    folded, changed = fold_batch_norms(graph, ["y", "x"])
    assert changed
    ops = op_counts(folded)
    assert "BatchNormWithGlobalNormalization" not in ops, ops
    assert (ops.get("BiasAdd"), ops.get("Mul")) == ((1, None) if after == "conv" else (None, 1))
    x = rng.normal(size=(2, 6, 6, 3)).astype(np.float32)
    np.testing.assert_allclose(run(folded, {"x:0": x}, "y:0"), run(graph, {"x:0": x}, "y:0"),
                               atol=1e-5)


def test_a_weight_the_user_keeps_stays_as_it_was(build, run):
    """`--outputs w,y` with `w` the conv's weights: the fold makes new weights and keeps `w`
    unchanged (it dropped it: a KeyError), held apart and owned or not."""
    from graphfreeze.graph.consts import node_value
    from graphfreeze.graph.weights import Weights, held

    def model():
        x = v1.placeholder(tf.float32, [None, 6, 6, 3], name="x")
        w = tf.identity(tf.constant(rng.normal(size=(3, 3, 3, 4)).astype(np.float32)), name="w")
        gamma, beta, mean, var = stats(4)
        y, *_ = tf.raw_ops.FusedBatchNormV3(x=tf.nn.conv2d(x, w, 1, "SAME"), scale=gamma,
                                            offset=beta, mean=mean, variance=var,
                                            epsilon=1e-3, is_training=False)
        tf.identity(y, name="y")

    graph = build(model)
    graph = fold_constants(graph, ["y", "x", "w"]).graph_def  # (w: the Identity over its Const)
    w_before = run(graph, {"x:0": np.zeros((1, 6, 6, 3), np.float32)}, "w:0")
    for own in (False, True):
        weights = Weights()
        with held(weights):
            source = type(graph)()
            source.CopyFrom(graph)
            for node in source.node:  # the weights held apart, as a checkpoint's are
                if node.op == "Const" and node.attr["value"].tensor.tensor_content:
                    value = np.array(node_value(node))
                    weights.hold(node, value, own=own)
            folded = fold_batch_norms(source, ["y", "x", "w"]).graph_def
        assert "FusedBatchNormV3" not in op_counts(folded)
        w_node = next(n for n in folded.node if n.name == "w")
        assert w_node.op == "Const"
        with held(weights):
            np.testing.assert_array_equal(node_value(w_node), w_before)
