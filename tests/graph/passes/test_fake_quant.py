"""Fake quantization to ONNX (issue 14): TensorFlow's FakeQuant kernels against the onnx target's
QuantizeLinear/DequantizeLinear on real frozen graphs, through the CLI; ranges read from
the graph; nodes that cannot be exact refused in one line."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from graphfreeze.formats.onnx.fakequant import nudge
from graphfreeze.graph.fake_quant import fake_quant_ranges


def _save(graph, path) -> None:
    path.write_bytes(graph.as_graph_def().SerializeToString())


@pytest.fixture(scope="module")
def fake_quant_pb(tmp_path_factory):
    """Every form the kernels take: Args with a positive min (zero point nudged to the edge),
    Vars with narrow_range and 4 bits (a clamp inside uint8), per-channel with a channel whose
    range is [0, 0] (zeros) and one nudged off zero, then a per-channel weight of a MatMul."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        a = tf.quantization.fake_quant_with_min_max_args(x, min=0.25, max=1.7, name="args")
        b = tf.quantization.fake_quant_with_min_max_vars(
            x, tf.constant(-0.61), tf.constant(0.93), num_bits=4, narrow_range=True, name="vars")
        c = tf.quantization.fake_quant_with_min_max_vars_per_channel(
            x, tf.constant([-1.0, 0.0, -0.3, 0.1]), tf.constant([1.0, 0.0, 2.2, 0.9]),
            name="per_channel")
        w = tf.quantization.fake_quant_with_min_max_vars_per_channel(
            tf.constant(np.random.RandomState(0).normal(size=(4, 3)).astype(np.float32)),
            tf.constant([-2.0, -1.5, -1.0]), tf.constant([2.0, 1.5, 1.0]), narrow_range=True,
            name="weights")
        tf.identity(tf.concat([a, b, c], 1), name="y")
        tf.identity(tf.matmul(c, w), name="z")
    path = tmp_path_factory.mktemp("fq") / "fq.pb"
    _save(graph, path)
    return path, graph.as_graph_def()


def test_nudge_is_tensorflows_for_every_range_form(fake_quant_pb):
    import tensorflow as tf

    x = np.random.RandomState(1).uniform(-7, 7, size=(20000,)).astype(np.float32)
    for lo, hi, bits, narrow in [(0.25, 1.7, 8, False), (-0.61, 0.93, 4, True),
                                 (-5.976036, 5.9904, 8, False), (-1.0, -0.2, 8, True)]:
        want = tf.quantization.fake_quant_with_min_max_vars(x, lo, hi, bits, narrow).numpy()
        scale, zp, nmin, nmax, qmin, qmax = nudge(lo, hi, bits, narrow)
        q = np.clip(np.rint(np.clip(x, nmin, nmax) / scale) + zp, qmin, qmax)  # QuantizeLinear
        got = (q - zp).astype(np.float32) * scale  # DequantizeLinear
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)  # same grid, same zero
        assert want.min() == pytest.approx(nmin) and want.max() == pytest.approx(nmax)


def test_ranges_are_read_for_every_fake_quant_with_constant_ranges(fake_quant_pb):
    _, graph_def = fake_quant_pb
    ranges = fake_quant_ranges(graph_def)
    assert set(ranges) == {"args", "vars", "per_channel", "weights"}
    assert ranges["vars"]["num_bits"] == 4 and ranges["vars"]["narrow_range"]
    assert ranges["per_channel"]["per_channel"] and len(ranges["per_channel"]["max"]) == 4


def test_onnx_keeps_fake_quant_semantics_exactly(fake_quant_pb, freeze, tmp_path):
    import onnxruntime as ort
    from graphfreeze.graph.session import run_graph_def

    path, graph_def = fake_quant_pb
    out = tmp_path / "fq.onnx"
    result = freeze(path, "--outputs", "y,z", "--target", "onnx", "-o", out)
    assert result.exit_code == 0, result.output
    car = json.loads((tmp_path / "fq.onnx.json").read_text())
    assert car["verification"]["max_abs_diff"]["y:0"] == 0, car["verification"]
    x = np.random.RandomState(2).uniform(-3, 3, size=(5000, 4)).astype(np.float32)
    want = run_graph_def(graph_def, {"x:0": x}, ["y:0", "z:0"])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    got = ort.InferenceSession(str(out), options).run(["y:0", "z:0"], {"x:0": x})
    np.testing.assert_array_equal(got[0], want[0])  # every fake-quant output, bit for bit
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-6)
    model = onnx.load(str(out))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") == 3 and "Where" in ops  # [0, 0] channel is zeros
    weights = {t.name: t for t in model.graph.initializer}["weights/quantized"]
    assert weights.data_type == onnx.TensorProto.INT8  # folded QAT weight kept as integers
    assert car["int8_weights"] == 1


def test_a_range_computed_at_run_time_is_refused_naming_the_node(freeze, tmp_path):
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        tf.identity(tf.quantization.fake_quant_with_min_max_vars(
            x, tf.reduce_min(x), tf.reduce_max(x), name="dynamic"), name="y")
    _save(graph, tmp_path / "dyn.pb")
    result = freeze(tmp_path / "dyn.pb", "--outputs", "y", "--target", "onnx",
                    "-o", tmp_path / "dyn.onnx")
    assert result.exit_code == 3, result.output
    line = result.output.strip().splitlines()[-1]
    assert "node 'dynamic' (FakeQuantWithMinMaxVars)" in line and "another target" in line
    assert "Traceback" not in result.output and not (tmp_path / "dyn.onnx").exists()
