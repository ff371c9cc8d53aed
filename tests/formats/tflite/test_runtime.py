"""TFLite artifacts run in LiteRT's interpreter (ai_edge_litert), made in one place
(graphfreeze.formats.tflite.interpreter), with tf.lite.Interpreter only as the fallback; and why a Flex
model still cannot be verified: LiteRT has no Flex delegate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from graphfreeze.errors import RunError
from graphfreeze.formats.tflite import export as tflite
from graphfreeze.formats.tflite import interpreter as tflite_runtime
from graphfreeze.formats.tflite.export import TFLiteOptions
from graphfreeze.tensors import sample_inputs

from tests.formats.tflite.test_export import export, graph_state


@pytest.fixture(scope="module")
def iris(samples):
    return graph_state(samples / "iris")


@pytest.fixture
def made(monkeypatch):
    """Every interpreter tflite_runtime.interpreter makes, recorded."""
    seen = []
    original = tflite_runtime.interpreter

    def spy(*args, **kwargs):
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(tflite_runtime, "interpreter", spy)
    return seen


def test_the_interpreter_is_litert():
    cls = tflite_runtime.interpreter_class()
    assert cls.__module__ == "ai_edge_litert.interpreter" and cls.__name__ == "Interpreter"


def test_without_ai_edge_litert_it_falls_back_to_tf_lite(monkeypatch):
    import tensorflow as tf

    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)  # import fails
    assert tflite_runtime.interpreter_class() is tf.lite.Interpreter


def test_the_stage_runs_and_reads_its_artifact_with_litert(iris, tmp_path, made):
    done, batch = export(iris, tflite.run, TFLiteOptions(), tmp_path / "m.tflite", "tflite")
    with batch:
        assert len(made) == 1, "io_types read the flatbuffer through tflite_runtime"
        feeds = sample_inputs(done.artifact.inputs, 3, seed=1)
        (got,) = done.artifact.open().run(feeds)
        assert len(made) == 2, "the verify runner made its interpreter through tflite_runtime"
        assert all(type(i).__module__ == "ai_edge_litert.interpreter" for i in made)
        assert got.shape == (3, 3)
        np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)  # softmax rows
    assert done.artifact.facts["tflite_io"]["inputs"]["x"]["shape"][-1] == 4


def test_int8_artifacts_run_in_litert_too(iris, tmp_path, made):
    options = TFLiteOptions(quantize="int8", calibration_samples=8, layer_report=False)
    done, batch = export(iris, tflite.run, options, tmp_path / "q.tflite", "edge-int8")
    with batch:
        (got,) = done.artifact.open().run(sample_inputs(done.artifact.inputs, 4, seed=2))
        assert got.dtype == np.float32 and got.shape == (4, 3)  # dequantized
    assert {type(i).__module__ for i in made} == {"ai_edge_litert.interpreter"}


def test_litert_cannot_run_flex_models_so_verify_asks_for_no_verify(sample, freeze, tmp_path):
    """The evidence behind the --no-verify message: ai_edge_litert ships no Flex delegate, and
    its interpreter refuses the Cumprod model at allocate_tensors. If a LiteRT release starts
    running it, this test fails: then verify `--allow-tf-ops` artifacts instead."""
    import ai_edge_litert

    package = Path(ai_edge_litert.__file__).parent
    assert not [p.name for p in package.rglob("*") if "flex" in p.name.lower()]
    model_dir = sample("iris_odd_op")
    out = tmp_path / "out"
    out.mkdir()
    result = freeze("--ckpt", model_dir, "--outputs", "flex_only", "--target", "tflite",
                    "--allow-tf-ops", "-o", out / "m.tflite")
    assert result.exit_code == 5, result.output
    assert "LiteRT" in result.output and "pass --no-verify" in result.output
    assert not list(out.iterdir()), "nothing written"
    result = freeze("--ckpt", model_dir, "--outputs", "flex_only", "--target", "tflite",
                    "--allow-tf-ops", "--no-verify", "-o", out / "m.tflite")
    assert result.exit_code == 0, result.output
    data = (out / "m.tflite").read_bytes()
    assert b"FlexCumprod" in data
    assert json.loads((out / "m.tflite.json").read_text())["allow_tf_ops"] is True
    interp = tflite_runtime.interpreter(model_content=data)
    with pytest.raises(RuntimeError, match="Select TensorFlow op.*FlexCumprod"):
        interp.allocate_tensors()


def test_the_runtime_turns_the_flex_refusal_into_a_run_error(samples, tmp_path):
    state = graph_state(samples / "iris_odd_op", outputs=("flex_only",))
    done, batch = export(state, tflite.run, TFLiteOptions(allow_tf_ops=True),
                         tmp_path / "f.tflite", "tflite")
    with batch:
        with pytest.raises(RunError, match="uses TensorFlow .Flex. ops.*cannot run"):
            done.artifact.open().run(sample_inputs(done.artifact.inputs, 2, seed=0))
