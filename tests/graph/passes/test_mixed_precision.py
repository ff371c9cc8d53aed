import numpy as np
import tensorflow as tf
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.builtin import strip_training
from graphfreeze.graph.passes.mixed_precision import HALF, float32_compute

v1 = tf.compat.v1
RNG = np.random.default_rng(0)
KERNEL = RNG.normal(0, 0.3, (3, 3, 3, 4)).astype(np.float32)
DENSE = RNG.normal(0, 0.3, (4, 2)).astype(np.float32)
IMAGE = RNG.uniform(0, 1, (2, 6, 6, 3)).astype(np.float32)


def _mixed(output_dtype=tf.float32, input_dtype=tf.float32):
    """What Keras' mixed_float16 freezes to: float32 weights and input cast to float16, float16
    Conv2D/BiasAdd/Relu/MaxPool/MatMul, the result cast back to `output_dtype`."""

    def model():
        x = v1.placeholder(input_dtype, [None, 6, 6, 3], name="x")
        tf.identity(tf.cast(_half_compute(x), output_dtype), name="y")

    return model


def _half_compute(x):
    """The float16 layers of `_mixed` on `x` (cast to float16)."""
    h = tf.cast(x, tf.float16)
    h = tf.nn.conv2d(h, tf.cast(tf.constant(KERNEL), tf.float16), 1, "SAME")
    h = tf.nn.relu(tf.nn.bias_add(h, tf.constant(np.full(4, 0.1, np.float16))))
    h = tf.reduce_mean(tf.nn.max_pool2d(h, 2, 2, "SAME"), axis=[1, 2])
    return tf.matmul(h, tf.cast(tf.constant(DENSE), tf.float16))


def _ends():
    """float16 compute whose outputs are its last Cast to float32 (`y`) and an ArgMax of float16
    (`cls`, int64), as a .pb read with --outputs names them."""
    h = _half_compute(v1.placeholder(tf.float32, [None, 6, 6, 3], name="x"))
    tf.cast(h, tf.float32, name="y")
    tf.argmax(h, axis=1, name="cls")


def _float32(image):
    """The same model computed in float32 throughout."""
    h = tf.nn.conv2d(image, KERNEL, 1, "SAME")
    h = tf.nn.relu(tf.nn.bias_add(h, np.full(4, np.float16(0.1), np.float32)))
    h = tf.reduce_mean(tf.nn.max_pool2d(h, 2, 2, "SAME"), axis=[1, 2])
    return tf.matmul(h, DENSE).numpy()


def _halves(graph_def) -> list[str]:
    return [n.name for n in graph_def.node
            if any(v.type == HALF or HALF in v.list.type for v in n.attr.values())]


def test_float16_compute_becomes_float32_and_its_casts_go(build, run):
    graph = build(_mixed())
    widened, count = float32_compute(graph, ["x", "y"])
    assert count == len(_halves(graph)) > 5 and _halves(widened) == [], _halves(widened)
    stripped, _ = strip_training(graph, ["x", "y"], {})
    assert "Cast" not in op_counts(stripped) and _halves(stripped) == [], op_counts(stripped)
    got = run(stripped, {"x:0": IMAGE}, "y:0")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _float32(IMAGE), rtol=1e-5, atol=1e-6)  # float32's own
    original = run(graph, {"x:0": IMAGE}, "y:0")
    assert np.abs(original - _float32(IMAGE)).max() > 1e-5  # where float16 compute rounds


def test_a_float16_output_keeps_its_type_and_name(build, run):
    graph = build(_mixed(output_dtype=tf.float16))
    stripped, _ = strip_training(graph, ["x", "y"], {})
    assert _halves(stripped) == ["y"], _halves(stripped)
    got = run(stripped, {"x:0": IMAGE}, "y:0")
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, _float32(IMAGE).astype(np.float16))


def test_outputs_not_float16_keep_their_types(build, run):
    graph = build(_ends)
    stripped, _ = strip_training(graph, ["x", "y", "cls"], {})
    assert _halves(stripped) == [], _halves(stripped)
    y, cls = run(stripped, {"x:0": IMAGE}, ["y:0", "cls:0"])
    assert y.dtype == np.float32 and cls.dtype == np.int64
    np.testing.assert_allclose(y, _float32(IMAGE), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(cls, _float32(IMAGE).argmax(axis=1))


def test_a_float16_input_is_not_mixed_precision(build):
    graph = build(_mixed(input_dtype=tf.float16))
    assert float32_compute(graph, ["x", "y"]) == (graph, 0)


def test_a_float32_graph_is_left_as_it_is(build):
    graph = build(lambda: tf.identity(v1.placeholder(tf.float32, [2], name="x") * 2.0, name="y"))
    assert float32_compute(graph, ["x", "y"]) == (graph, 0)
