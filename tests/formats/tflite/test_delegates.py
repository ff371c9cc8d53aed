"""GPU delegate coverage on real flatbuffers: the op count LiteRT's own analyzer lists, the ops
that fall back with the checker's reason, in the sidecar and in `freeze inspect --device gpu`."""

from __future__ import annotations

import json

import pytest
from graphfreeze.formats.tflite.delegates import analyzer_op_count, coverage

from tests.e2e.test_bad_input import assert_failed


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A SavedModel whose TFLite has ops the GPU takes (CONV_2D, RELU) and two it does not:
    TOPK_V2 (no case in the checker) and an int32 -> int64 CAST."""
    import tensorflow as tf

    class Model(tf.Module):
        def __init__(self):
            self.kernel = tf.Variable(tf.random.normal([3, 3, 3, 4], seed=1))

        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 3], tf.float32)])
        def __call__(self, x):
            y = tf.nn.relu(tf.nn.conv2d(x, self.kernel, 1, "SAME"))
            values, indices = tf.math.top_k(tf.reshape(y, [1, -1]), 4)
            return {"values": values, "ids": tf.cast(indices, tf.int64) + 1}

    folder = tmp_path_factory.mktemp("gpu") / "model"
    tf.saved_model.save(Model(), str(folder))
    return folder


def test_coverage_counts_what_the_analyzer_lists(saved_model, freeze, monkeypatch):
    monkeypatch.chdir(saved_model.parent)
    result = freeze("convert", "model", "--target", "tflite", "--no-verify", "-o", "m.tflite")
    assert result.exit_code == 0, result.output
    data = (saved_model.parent / "m.tflite").read_bytes()
    judged = coverage(data)
    assert len(judged.ops) == analyzer_op_count(data)
    fallbacks = {v.op: v.reason for v in judged.fallbacks}
    assert fallbacks["TOPK_V2"] == "Not supported op TOPK_V2"
    assert "INT64" in fallbacks["CAST"]
    assert "CONV_2D" not in fallbacks and "CONV_2D" in {v.op for v in judged.ops}
    sidecar = json.loads((saved_model.parent / "m.tflite.json").read_text())
    assert sidecar["gpu"]["line"] == judged.line
    assert judged.line.startswith(f"{len(judged.ops) - len(fallbacks)}/{len(judged.ops)} ops, "
                                  "falls back: ")
    assert "gpu: " + judged.line in result.output

    shown = freeze("inspect", "--device", "gpu", "m.tflite", "--json")
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.output)
    assert report["line"] == judged.line and report["judged"] == "tflite file"
    assert {v["op"] for v in report["falls_back"]} == {"TOPK_V2", "CAST"}


def test_before_converting(saved_model, freeze, monkeypatch):
    """The TensorFlow model itself: converted in memory, nothing written beside it."""
    monkeypatch.chdir(saved_model.parent)
    before = sorted(p.name for p in saved_model.parent.iterdir())
    result = freeze("inspect", "--device", "gpu", "model")
    assert result.exit_code == 0, result.output
    assert "converted in memory" in result.output and "TOPK_V2: Not supported op" in result.output
    assert sorted(p.name for p in saved_model.parent.iterdir()) == before


def test_a_checkpoint_is_cut_at_the_outputs_given(sample, freeze, monkeypatch):
    """A checkpoint names no outputs: inspect --device takes --outputs as freeze does."""
    monkeypatch.chdir(sample("iris"))
    assert_failed(freeze("inspect", "--device", "gpu", "model.ckpt-200"), 3, "--outputs", "probs")
    result = freeze("inspect", "--device", "gpu", "model.ckpt-200", "--outputs", "probs", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["judged"] == "converted in memory (target tflite)" and report["ops"]
    assert freeze("inspect", "model.ckpt-200", "--outputs", "probs").exit_code == 2
    assert_failed(freeze("inspect", "--device", "gpu", "model.ckpt-200", "--outputs", "probs",
                         "--tag", "serve"), 6, "--tag is an option of saved_model models")


def test_a_tflite_takes_no_conversion_flags(saved_model, freeze, monkeypatch):
    monkeypatch.chdir(saved_model.parent)
    result = freeze("model", "--target", "tflite", "--no-verify", "-o", "t.tflite")
    assert result.exit_code == 0, result.output
    for extra in (["--outputs", "probs"], ["--step", "3"]):
        assert_failed(freeze("inspect", "--device", "gpu", "t.tflite", *extra), 6,
                      "t.tflite: a .tflite is judged as it is")


def test_not_tflite(tmp_path, freeze, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"\x08\x07not tflite")
    assert_failed(freeze("inspect", "--device", "gpu", "model.onnx"), 3, "model.onnx",
                  "not a TFLite file", ".tflite")


def test_batch_reports_show_it(saved_model, freeze, monkeypatch, tmp_path):
    """md, html and json batch reports carry each TFLite artifact's line from its sidecar."""
    from graphfreeze.batch import report as rep
    from graphfreeze.batch.results import OK, ArtifactRecord, JobResult, Report

    monkeypatch.chdir(saved_model.parent)
    result = freeze("convert", "model", "--target", "tflite", "--no-verify", "-o", "b.tflite")
    assert result.exit_code == 0, result.output
    car = json.loads((saved_model.parent / "b.tflite.json").read_text())
    record = ArtifactRecord(target="tflite", path="b.tflite", sha256=car["sha256"],
                            bytes=car["bytes"], sidecar_path="b.tflite.json", sidecar=car)
    report = Report(jobs=(JobResult("gpu-model", "model", ("tflite",), OK, 1.0, (record,)),),
                    seconds=1.0)
    line = car["gpu"]["line"]
    assert line in rep.report_md(report).decode()
    import html

    assert html.escape(line) in rep.report_html(report).decode()
    data = json.loads(rep.report_json(report))
    assert data["jobs"][0]["artifacts"][0]["sidecar"]["gpu"]["line"] == line
