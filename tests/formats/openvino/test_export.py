"""The openvino target: the sample CNN to OpenVINO IR, verified on OpenVINO's CPU runtime
against the original, the divergence locator on the IR's own tensors, ops OpenVINO lacks named
in one line (by OpenVINO's own frontend), and a missing `openvino` refused before any work."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openvino")


def test_sample_cnn_converts_and_verifies(samples, tmp_path, freeze):
    out = tmp_path / "out/"
    result = freeze("--ckpt", samples / "cnn_v2", "--outputs", "probs", "--target", "openvino",
                    "-o", f"{out}/", "--explain")
    assert result.exit_code == 0, result.output + result.stderr
    xml, weights = out / "model.ckpt-200.xml", out / "model.ckpt-200.bin"
    assert xml.read_bytes().startswith(b"<?xml") and weights.stat().st_size > 1000
    car = json.loads((out / "model.ckpt-200.xml.json").read_text())
    assert car["format"] == "openvino" and car["weights"] == "model.ckpt-200.bin"
    check = car["verification"]
    assert check["passed"] and check["tolerance"] == 1e-4 and check["max_abs_diff"]["probs:0"] <= 1e-4
    assert check["divergence"]["compared"] >= 3  # the IR's own intermediate tensors
    assert "openvino: core.read_model" in result.output


def igamma_graph(path):
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        tf.identity(tf.math.igamma(x, x + 1.0), name="probs")
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return graph.as_graph_def()


def test_an_op_openvino_lacks_is_one_line_naming_the_node(tmp_path, freeze):
    igamma_graph(tmp_path / "odd.pb")
    result = freeze("--graph", tmp_path / "odd.pb", "--outputs", "probs", "--target", "openvino")
    assert result.exit_code == 3
    (line,) = result.stderr.strip().splitlines()
    assert "OpenVINO cannot convert op(s) Igamma (node Igamma (Igamma)); use another target" in line
    assert not list(tmp_path.glob("odd.xml*")) and not list(tmp_path.glob("*.bin"))


def test_gaps_come_from_openvinos_frontend(tmp_path):
    from graphfreeze.formats.openvino.gaps import openvino_gaps

    graph_def = igamma_graph(tmp_path / "odd.pb")
    gaps = openvino_gaps(graph_def, {n.op for n in graph_def.node})
    assert gaps.unsupported == ["Igamma"] and "Igamma" in gaps.line


def test_variables_before_freezing_are_no_gap(samples):
    """inspect judges the graph before freezing: OpenVINO fails on its variables, which freezing
    removes, so only compute ops count."""
    from graphfreeze.inspect.report import inspect

    report = inspect(str(samples / "iris" / "model.ckpt-200"))
    assert report["targets"]["openvino"]["summary"] == "openvino: all ops convert"


def test_a_qat_model_runs_in_int8_and_is_judged_as_quantized(zoo, tmp_path, freeze):
    """OpenVINO's CPU plugin runs a QAT model's FakeQuantize in int8 where TensorFlow simulates
    it in float: judged on averages as the other QAT artifacts are, not refused."""
    path, args = zoo("qat_cnn")
    out = tmp_path / "out"
    result = freeze(path, *args, "--target", "openvino", "-o", f"{out}/")
    assert result.exit_code == 0, result.output + result.stderr
    (car,) = [json.loads(p.read_text()) for p in out.glob("*.xml.json")]
    assert car["quantization"].startswith("qat") and car["openvino_op_counts"]["FakeQuantize"]
    check = car["verification"]
    assert check["passed"] and check["rmse_range"] == 0.025
    assert max(m["mean_abs_diff"] for m in check["metrics"].values()) < 0.01

