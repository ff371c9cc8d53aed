"""Per-layer quantization error from TensorFlow's QuantizationDebugger: every quantized target
reports it (sidecar table, worst first; one summary line), a target can turn it off, and a
deliberately bad layer comes first."""

from __future__ import annotations

import json

import numpy as np
import pytest
from graphfreeze.formats.tflite import export as tflite
from graphfreeze.formats.tflite import quant_debug
from graphfreeze.formats.tflite.export import TFLiteOptions

from tests.e2e.test_freeze_cli import load_graph
from tests.formats.tflite.test_export import export, graph_state

QUANTIZED = {"edge-int8": "int8", "tflite-dynamic": "dynamic", "tflite-fp16": "fp16"}


def _sidecars(out, stem="model.ckpt-200"):
    return {target: json.loads((out / f"{stem}.{target}.tflite.json").read_text())
            for target in QUANTIZED}


def _check_table(rows, node_names):
    assert 0 < len(rows) <= quant_debug.TOP
    ratios = [r["rmse/scale"] for r in rows]
    assert all(isinstance(x, float) for x in ratios), rows
    assert ratios == sorted(ratios, reverse=True), "worst first"
    for row in rows:
        assert set(row) >= {"tensor", "op", "rmse/scale", "mean_error", "max_abs_error", "scale"}
        assert row["op"].isupper() and row["scale"] > 0  # TFLite op names: CONV_2D, ...
        # TFLite joins the TensorFlow names an op fused (a;b;c); `layer` keeps the graph's nodes
        assert set(row["layer"].split(";")) <= node_names, row
        assert row["layer"].split(";")[0] in row["tensor"]


def test_every_quantized_target_reports_its_worst_layers(sample, freeze, tmp_path):
    model_dir = sample("cnn_v2")
    out = tmp_path / "out"
    out.mkdir()
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target",
                    "android," + ",".join(QUANTIZED), "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    nodes = {n.name for n in load_graph(out / "model.ckpt-200.pb").node}
    for target, sidecar in _sidecars(out).items():
        rows = sidecar["quantization_layers"]
        _check_table(rows, nodes)
        assert {r["op"] for r in rows} >= {"CONV_2D", "FULLY_CONNECTED"}
        measure = sidecar["quantization_layers_measure"]
        worst = rows[0]["layer"].split(";")[0]  # a fused op: its first node
        if QUANTIZED[target] == "int8":
            assert measure.startswith("this artifact's int8")
            line = f"worst quantized layers: {worst} (rmse/scale {rows[0]['rmse/scale']:.2f})"
        else:
            assert "full-integer quantization only" in measure
            line = f"layers most sensitive to int8 (TF's debugger measures full int8 only): {worst}"
        assert line in result.output, result.output
    android = json.loads((out / "model.ckpt-200.pb.json").read_text())
    assert "quantization_layers" not in android


@pytest.fixture(scope="module")
def cnn(samples):
    return graph_state(samples / "cnn_v2")


def test_layer_report_false_turns_it_off_and_float_has_none(cnn, tmp_path):
    for options in (TFLiteOptions(quantize="int8", calibration_samples=8, layer_report=False),
                    TFLiteOptions()):
        done, batch = export(cnn, tflite.run, options, tmp_path / "m.tflite", "t")
        with batch:
            assert "quantization_layers" not in done.artifact.facts
            assert done.artifact.summary == ()


def test_a_flex_model_gets_a_warning_not_a_failure(samples, tmp_path):
    state = graph_state(samples / "iris_odd_op", outputs=("flex_only",))
    options = TFLiteOptions(quantize="dynamic", allow_tf_ops=True, calibration_samples=4)
    done, batch = export(state, tflite.run, options, tmp_path / "f.tflite", "tflite-dynamic")
    with batch:
        assert done.artifact.size > 0 and "quantization_layers" not in done.artifact.facts
        assert done.notes["warnings"] == [
            "tflite-dynamic: no per-layer quantization report (TensorFlow's "
            "QuantizationDebugger: its calibrator cannot run Flex ops)"]


def _bad_layer_graph(path):
    """x[?,4] -> hidden (relu) -> bad (relu) -> logits -> probs. Column 0 of `hidden` is a tiny
    constant (1e-3) and every output channel of `bad` weighs it by 1000: each channel's int8
    weight scale becomes 1000/127, so its ordinary weights (|w| < 2) round to zero and `bad`
    loses most of its output, far beyond rounding; the other layers only round."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    w1 = rng.normal(size=(4, 8)).astype(np.float32)
    w1[:, 0] = 0.0
    b1 = np.full(8, 0.1, np.float32)
    b1[0] = 1e-3
    w2 = np.clip(rng.normal(size=(8, 8)), -1.9, 1.9).astype(np.float32)
    w2[0, :] = 1000.0
    w3 = rng.normal(size=(8, 3)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1), name="hidden")
        bad = tf.nn.relu(tf.nn.bias_add(tf.matmul(hidden, w2), np.zeros(8, np.float32)),
                         name="bad")
        logits = tf.nn.bias_add(tf.matmul(bad, w3), np.zeros(3, np.float32), name="logits")
        tf.nn.softmax(logits, name="probs")
    path.write_bytes(graph.as_graph_def().SerializeToString())


def test_a_deliberately_bad_layer_comes_first(freeze, tmp_path):
    model = tmp_path / "bad.pb"
    _bad_layer_graph(model)
    out = tmp_path / "out"
    out.mkdir()
    result = freeze("--graph", model, "--outputs", "probs", "--target", ",".join(QUANTIZED),
                    "--no-verify", "-o", f"{out}/")  # the bad layer may fail verification
    assert result.exit_code == 0, result.output
    nodes = {n.name for n in load_graph(model).node}
    for target, sidecar in _sidecars(out, "bad.optimized").items():
        rows = sidecar["quantization_layers"]
        _check_table(rows, nodes)
        assert "bad" in rows[0]["layer"].split(";"), (target, rows)
        assert rows[0]["rmse/scale"] > 5 * max(r["rmse/scale"] for r in rows[1:]), rows
        assert rows[0]["rmse/scale"] > 5 * quant_debug.ROUNDING
