"""A SavedModel's signature for a converter that reads the folder itself: which signatures are
offered (`read_as_is`), and the interface's inputs and outputs as the signature records them.
Through the `freeze` command: tests/formats/openvino/test_saved_model.py."""

from __future__ import annotations

from graphfreeze.sources import saved_model_interface
from graphfreeze.sources.saved_model import (
    SavedModelOptions,
    SavedModelSource,
    read_saved_model_proto,
)
from graphfreeze.sources.saved_model_interface import SignatureModel, read_as_is


def _meta(folder):
    return read_saved_model_proto(str(folder)).meta_graphs[0]


def test_a_plain_signature_is_read_as_is_with_its_inputs_and_outputs(source_cases):
    meta = _meta(source_cases / "two_inputs_savedmodel")
    assert read_as_is(meta, "serving_default")
    model = SignatureModel(str(source_cases / "two_inputs_savedmodel"), meta, "serve",
                           "serving_default")
    inputs, outputs = model.infos()
    assert [(i.name, i.dtype, i.shape) for i in inputs] == [("alpha:0", "float32", (None, 3)),
                                                            ("zeta:0", "float32", (None, 4))]
    assert [(o.name, o.dtype, o.shape) for o in outputs] == [("out:0", "float32", (None, 3))]
    assert [n.op for n in model.graph_def.node] == ["Placeholder"] * 3
    assert list(model.graph_def.node[2].input) == ["^alpha", "^zeta"]  # the output after both


def test_training_work_integer_inputs_and_other_signatures_are_not(source_cases, other_samples):
    assert not read_as_is(_meta(other_samples / "tf1_savedmodel"), "serving_default")  # keep_prob
    assert not read_as_is(_meta(other_samples / "tf2_savedmodel"), "serving_default")  # dropout
    meta = _meta(source_cases / "two_inputs_savedmodel")
    meta.signature_def["serving_default"].inputs["alpha"].dtype = 3  # int32: token ids
    assert not read_as_is(meta, "serving_default")
    folder = str(source_cases / "two_inputs_savedmodel")
    source = SavedModelSource()
    assert source.interface(folder, SavedModelOptions(), unsafe=False) is not None
    assert source.interface(folder, SavedModelOptions(signature="other"), unsafe=False) is None


def test_a_shape_the_signature_does_not_record_is_unknown(source_cases):
    meta = _meta(source_cases / "two_inputs_savedmodel")
    meta.signature_def["serving_default"].outputs["out"].ClearField("tensor_shape")
    model = SignatureModel("unused", meta, "serve", "serving_default")
    assert model.infos()[1][0].shape is None  # not a scalar


def test_a_key_no_node_may_be_named_is_not_read_as_is(source_cases):
    meta = _meta(source_cases / "two_inputs_savedmodel")
    outputs = meta.signature_def["serving_default"].outputs
    outputs["b c"].CopyFrom(outputs.pop("out"))
    assert not read_as_is(meta, "serving_default")


def test_each_run_loads_the_files_again(source_cases):
    """A process that runs twice (a batch worker, a Python caller) reads the files each run;
    the earlier run's session is closed."""
    import numpy as np

    folder = str(source_cases / "two_inputs_savedmodel")
    meta = _meta(source_cases / "two_inputs_savedmodel")
    runs = [SignatureModel(folder, meta, "serve", "serving_default") for _ in range(2)]
    feeds = {"alpha:0": np.ones((2, 3), np.float32), "zeta:0": np.ones((2, 4), np.float32)}
    first = runs[0].run_reference(None, feeds, ["out:0"])
    session = saved_model_interface._LOADED["session"]
    second = runs[1].run_reference(None, feeds, ["out:0"])
    assert saved_model_interface._LOADED["session"] is not session and session._closed
    np.testing.assert_allclose(first[0], second[0])
    weights = np.arange(12, dtype=np.float32).reshape(4, 3) / 10  # models/source_cases.py
    np.testing.assert_allclose(first[0], np.ones((2, 4)) @ weights + 1, rtol=1e-6)
