"""export_tflite called directly on a real frozen and stripped sample graph (no CLI)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
from graphfreeze import convert
from graphfreeze.errors import InputError
from graphfreeze.formats.tflite import export as tflite
from graphfreeze.formats.tflite.convert import converter_error_ops
from graphfreeze.formats.tflite.export import TFLiteOptions
from graphfreeze.graph.session import run_graph_def
from graphfreeze.io import storage
from graphfreeze.registry import Registry
from graphfreeze.tensors import sample_inputs


def graph_state(source, outputs=("probs",)):
    """The State an export stage gets, built as convert.execute builds it: prepare, load,
    initial_state, then the android target's stages up to (not including) its export."""
    registry = Registry.default(plugins=False)
    request = convert.Request(source=str(source), outputs=tuple(outputs), force=True)
    prepared = convert.prepare(request, registry)
    model = prepared.source.load(request.source, prepared.source_options, request.unsafe)
    state = convert.initial_state(request, model)
    steps = prepared.plans[0].steps
    assert [s.stage.name for s in steps[:3]] == ["freeze_variables", "strip_training",
                                                 "optimize_for_inference"]
    for step in steps[:3]:
        state = step.stage.run(state, step.options)
    return state


def export(state, stage_run, options, path, target):
    """Run one export stage into a fresh Transaction; returns (state, txn), the transaction open."""
    txn = storage.Transaction(force=False)
    return stage_run(dataclasses.replace(state, files=txn, target=target,
                                         output_path=str(path)), options), txn


@pytest.fixture(scope="module")
def iris(samples):
    return graph_state(samples / "iris")


def test_float_tflite_file_io_and_runner_match_the_frozen_graph(iris, tmp_path):
    path = tmp_path / "out" / "iris.tflite"
    done, txn = export(iris, tflite.run, TFLiteOptions(), path, "tflite")
    with txn:
        artifact = done.artifact
        assert artifact.path == str(path) and artifact.format.name == "tflite"
        assert not path.exists(), "staged, not in place before commit"
        assert [i.name for i in artifact.inputs] == ["x:0"]
        assert [(o.name, o.dtype, o.shape) for o in artifact.outputs] == [("probs:0", "float32",
                                                                          (None, 3))]
        io = artifact.facts["tflite_io"]
        assert io["inputs"]["x"]["dtype"] == "float32" and io["inputs"]["x"]["shape"][-1] == 4
        assert io["outputs"]["probs"]["dtype"] == "float32"
        assert io["inputs"]["x"]["scale"] == 0.0
        assert artifact.facts["quantize"] == "none" and artifact.facts["node_count"] > 0
        feeds = sample_inputs(artifact.inputs, 5, seed=3)
        (got,) = artifact.open().run(feeds)  # runs the staged file
        (want,) = run_graph_def(iris.graph_def, feeds, ["probs:0"])
        assert got.shape == (5, 3)
        np.testing.assert_allclose(got, want, atol=1e-5)
        txn.commit()
    data = path.read_bytes()
    assert len(data) == artifact.size and hashlib.sha256(data).hexdigest() == artifact.sha256
    assert data[4:8] == b"TFL3"  # the flatbuffer's file identifier
    assert sorted(p.name for p in path.parent.iterdir()) == ["iris.tflite"]


def test_int8_quantizes_io_and_the_runner_dequantizes(iris, tmp_path):
    options = TFLiteOptions(quantize="int8", calibration_samples=8)
    done, txn = export(iris, tflite.run, options, tmp_path / "q.tflite", "edge-int8")
    with txn:
        io = done.artifact.facts["tflite_io"]
        assert io["inputs"]["x"]["dtype"] == "int8" and io["inputs"]["x"]["scale"] > 0
        assert io["outputs"]["probs"]["dtype"] == "int8"
        assert done.artifact.facts["calibration"] == "synthetic"
        assert any("synthetic random inputs" in w for w in done.notes["warnings"])
        feeds = sample_inputs(done.artifact.inputs, 16, seed=1)
        (got,) = done.artifact.open().run(feeds)
        (want,) = run_graph_def(iris.graph_def, feeds, ["probs:0"])
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.abs(got - want).mean() < 0.1  # dequantized probabilities, not int8 codes
    assert not (tmp_path / "q.tflite").exists(), "an uncommitted batch leaves nothing"
    assert list(tmp_path.iterdir()) == []


def test_calibration_samples_from_an_npz_or_the_verify_data(iris, tmp_path):
    npz = tmp_path / "calib.npz"
    np.savez(npz, x=np.ones((6, 4), np.float32))  # rows without the batch dim get one
    inputs = tflite.io_infos(iris)[0]
    rows = TFLiteOptions(calibration=str(npz)).samples(inputs)
    assert len(rows) == 6 and rows[0][0].shape == (1, 4) and rows[0][0].dtype == np.float32
    assert len(TFLiteOptions(verify_data=str(npz)).samples(inputs)) == 6  # one flag for both
    synthetic = TFLiteOptions(calibration_samples=3).samples(inputs)
    assert len(synthetic) == 3 and synthetic[0][0].shape == (1, 4)
    assert not np.array_equal(synthetic[0][0], synthetic[1][0])
    (tmp_path / "bad.npz").write_text("not numpy")
    with pytest.raises(InputError, match="bad.npz: not an .npz or .npy file"):
        TFLiteOptions(calibration=str(tmp_path / "bad.npz")).samples(inputs)


def test_an_op_no_tflite_kernel_runs_is_named(samples, tmp_path):
    odd = graph_state(samples / "iris_odd_op", outputs=("flex_only", "odd"))
    with pytest.raises(InputError) as err:
        export(odd, tflite.run, TFLiteOptions(allow_tf_ops=True), tmp_path / "o.tflite", "t")
    assert "no kernel for op(s) Igamma, not even with --allow-tf-ops" in str(err.value)
    assert "Cumprod" not in str(err.value)  # Flex runs it
    # the parser on the converter's real message: Cumprod is left to Flex
    assert converter_error_ops(str(err.value.__cause__)) == (["Cumprod"], ["Igamma"])
    assert list(tmp_path.iterdir()) == []


def test_an_op_only_flex_runs_asks_for_allow_tf_ops(samples, tmp_path):
    flex_only = graph_state(samples / "iris_odd_op", outputs=("flex_only",))
    with pytest.raises(InputError) as err:
        export(flex_only, tflite.run, TFLiteOptions(), tmp_path / "f.tflite", "t")
    assert converter_error_ops(str(err.value.__cause__)) == (["Cumprod"], [])
    assert "builtins cannot take op(s) Cumprod; pass --allow-tf-ops" in str(err.value)


# Excerpts of TF 2.21 converter errors (MLIR dumps cut), for the parser alone.
NEEDS_FLEX = """Could not translate MLIR to FlatBuffer.<unknown>:0: error: loc(fused["Cumprod:", \
"flex_only"]): 'tf.Cumprod' op is neither a custom op nor a flex op
<unknown>:0: note: loc(fused["Cumprod:", "flex_only"]): Error code: ERROR_NEEDS_FLEX_OPS
<unknown>:0: error: failed while converting: 'main':
Some ops are not supported by the native TFLite runtime, you can enable TF kernels fallback \
using TF Select. See instructions: https://www.tensorflow.org/lite/guide/ops_select
TF Select ops: Cumprod
Details:
\ttf.Cumprod(tensor<1x3xf32>, tensor<i32>) -> (tensor<1x3xf32>) : {device = ""}
"""
NEEDS_CUSTOM = """Could not translate MLIR to FlatBuffer.<unknown>:0: error: loc(fused["Igamma:", \
"odd"]): 'tf.Igamma' op is neither a custom op nor a flex op
<unknown>:0: note: loc(fused["Igamma:", "odd"]): Error code: ERROR_NEEDS_CUSTOM_OPS
<unknown>:0: error: failed while converting: 'main':
Some ops in the model are custom ops, See instructions to implement custom ops: \
https://www.tensorflow.org/lite/guide/ops_custom
Custom ops: Igamma
Details:
\ttf.Igamma(tensor<1x3xf32>, tensor<f32>) -> (tensor<1x3xf32>) : {device = ""}
"""


@pytest.mark.parametrize("message,flex,nowhere", [
    (NEEDS_CUSTOM, [], ["Igamma"]),
    (NEEDS_FLEX, ["Cumprod"], []),
    (NEEDS_CUSTOM + NEEDS_FLEX, ["Cumprod"], ["Igamma"]),
    ("flatbuffer op names: FlexCumprod FlexErf", ["Cumprod", "Erf"], []),
    ("TFLite conversion failed: tf.lite converter crashed (lowercase tf.ops are no op names)",
     [], []),
])
def test_converter_error_ops_parser(message, flex, nowhere):
    assert converter_error_ops(message) == (flex, nowhere)


def test_an_input_of_unknown_rank_is_refused(iris, tmp_path):
    graph_def = type(iris.graph_def)()
    graph_def.CopyFrom(iris.graph_def)
    (x,) = [n for n in graph_def.node if n.name == "x"]
    x.attr["shape"].shape.unknown_rank = True
    del x.attr["shape"].shape.dim[:]
    state = dataclasses.replace(iris, graph_def=graph_def)
    with pytest.raises(InputError, match=r"input 'x:0' has unknown rank; TFLite needs its rank: "
                                         r"give its shape, e\.g\. --inputs 'x\[1,\.\.\.\]'"):
        export(state, tflite.run, TFLiteOptions(), tmp_path / "s.tflite", "tflite")
    assert list(tmp_path.iterdir()) == []
