"""`freeze reduce` end to end, in the model's folder: a real converter failure shrunk to the op
that causes it (and the stock converter failing on the repro), a model that does not fail, and
a failure that comes and goes."""

from __future__ import annotations

import json
import os

from tests.e2e.test_bad_input import assert_failed


def test_a_tflite_refusal_is_reduced_to_its_op(family, freeze, tmp_path, monkeypatch):
    path, args = family("reduce_cnn_erfinv")
    monkeypatch.chdir(path.parent)
    out = tmp_path / "repro"
    result = freeze("reduce", path.name, *args, "--target", "tflite", "--tries", "1",
                    "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    assert "stock converter (python model.ckpt.tflite.reduced.py): fails the same way" in \
        result.output, result.output
    record = json.loads((out / "model.ckpt.tflite.reduced.json").read_text())
    assert record["ops"].get("Erfinv") == 1 and record["nodes_after"] <= 10, record
    assert record["nodes_before"] > record["nodes_after"] and record["stock"]["same"], record
    assert sorted(os.listdir(out)) == [f"model.ckpt.tflite.reduced.{s}" for s in
                                       ("json", "pb", "py")]


def test_a_divergence_is_reduced_with_the_inputs_it_needs(family, freeze, tmp_path,
                                                           monkeypatch):
    # TFLite's SOFTPLUS overflows to inf on 100 x where TensorFlow's does not
    path, args = family("reduce_cnn_softplus")
    monkeypatch.chdir(path.parent)
    out = tmp_path / "repro"
    result = freeze("reduce", path.name, *args, "--target", "tflite", "--tries", "1",
                    "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    record = json.loads((out / "model.ckpt.tflite.reduced.json").read_text())
    assert record["kind"] == "diverges" and record["ops"].get("Softplus") == 1, record
    assert record["nodes_after"] <= 10 and record["stock"]["same"], record
    assert "max |diff| inf" in record["stock"]["last_line"], record["stock"]
    import numpy as np

    with np.load(out / "model.ckpt.tflite.reduced.npz") as feeds:
        assert sorted(feeds.files) == record["inputs"]
    # its divergence drawn for Model Explorer, keyed by the reduced .pb's node indexes
    from graphfreeze.explain.overlay import WORST
    from tensorflow.core.framework.graph_pb2 import GraphDef

    overlay = out / "model.ckpt.tflite.reduced.pb.divergence.json"
    assert record["explain"] == {"divergence": overlay.name}
    drawn = json.loads(overlay.read_text())["results"]
    nodes = GraphDef.FromString((out / "model.ckpt.tflite.reduced.pb").read_bytes()).node
    worst = [nodes[int(k)].name for k, v in drawn.items() if v["bgColor"] == WORST]
    assert worst and f"first at node '{worst[0]}'" in record["failure"], (drawn, record)


def test_a_model_that_converts_is_said_and_nothing_written(family, freeze, tmp_path,
                                                           monkeypatch):
    path, args = family("reduce_cnn_lgamma")  # Lgamma: TFLite takes it (ONNX does not)
    monkeypatch.chdir(path.parent)
    out = tmp_path / "repro"
    result = freeze("reduce", path.name, *args, "--target", "tflite", "--tries", "1",
                    "-o", f"{out}/")
    assert_failed(result, 3, "converts to tflite and verifies", "nothing to reduce")
    assert not out.exists()


def test_an_unusable_o_or_two_targets_are_said_before_any_trial(family, freeze, tmp_path,
                                                                 monkeypatch):
    path, args = family("reduce_cnn_lgamma")
    monkeypatch.chdir(path.parent)
    (tmp_path / "afile").write_text("a file\n")
    result = freeze("reduce", path.name, *args, "--target", "onnx", "-o", tmp_path / "afile")
    assert_failed(result, 4, f"{tmp_path / 'afile'}: is a file, not a folder; choose another -o")
    result = freeze("reduce", path.name, *args, "--target", "tflite,onnx")
    assert result.exit_code == 2 and "--target tflite,onnx: reduce takes one target" in \
        result.output


def test_a_failure_that_comes_and_goes_is_said_after_the_tries(family, freeze, tmp_path,
                                                               monkeypatch):
    # its verification passes with probability 1/2 each try, and the tries stop at the first
    # that differs: 20 tries all alike happen once in 2^19 runs. Two failing tries can differ
    # too: the locator's own runs draw afresh, so the first node it names can change.
    path, args = family("reduce_flaky")
    monkeypatch.chdir(path.parent)
    out = tmp_path / "repro"
    result = freeze("reduce", path.name, *args, "--target", "android", "--tries", "20",
                    "-o", f"{out}/")
    line = assert_failed(result, 3, "not deterministic", "try 1:", "try 2:")
    assert "diverges" in line
    assert not out.exists()
