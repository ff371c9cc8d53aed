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
    session = saved_model_interface._LOADED["close"].__self__
    second = runs[1].run_reference(None, feeds, ["out:0"])
    assert saved_model_interface._LOADED["close"].__self__ is not session
    assert session.session is None  # closed
    np.testing.assert_allclose(first[0], second[0])
    weights = np.arange(12, dtype=np.float32).reshape(4, 3) / 10  # models/source_cases.py
    np.testing.assert_allclose(first[0], np.ones((2, 4)) @ weights + 1, rtol=1e-6)


def test_the_config_is_tensorflows():
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    assert saved_model_interface.CONFIG == config.SerializeToString(deterministic=True)


def test_the_c_apis_loader_runs_what_the_python_loader_runs(source_cases, other_samples):
    """TensorFlow's C++ SavedModel loader through the C API (what the reference uses) and its
    Python TF1 loader (the fallback): the same outputs, bit for bit, on TF1 and TF2
    SavedModels."""
    import numpy as np
    from graphfreeze.tensors import sample_inputs

    for folder in (source_cases / "two_inputs_savedmodel", other_samples / "tf1_savedmodel",
                   other_samples / "tf2_savedmodel"):
        model = SignatureModel(str(folder), _meta(folder), "serve", "serving_default")
        inputs, outputs = model.infos()
        feeds = {model.tensors[0][i.name[:-2]]: v for i, v in zip(
            inputs, sample_inputs(inputs, 3, 0).values(), strict=True)}
        fetches = [model.tensors[1][o.name[:-2]] for o in outputs]
        loaded_c = saved_model_interface._load_c(model)
        loaded_python = saved_model_interface._load_python(model, str(folder))
        try:
            got, want = loaded_c["run"](feeds, fetches), loaded_python["run"](feeds, fetches)
        finally:
            loaded_c["close"]()
            loaded_python["close"]()
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


def test_a_signature_that_fails_as_it_runs_is_one_line_naming_the_node(tmp_path):
    """TensorFlow's error from the original's run (the C API's, then the Python loader's
    words for it) is verification's one line, as for any other source."""
    import numpy as np
    import pytest
    import tensorflow as tf
    from graphfreeze.errors import InputError

    folder = str(tmp_path / "reshape_fails")
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.compat.v1.get_variable("w", initializer=tf.ones([3]))
        y = tf.reshape(x * w, [-1, 5], name="y")  # 2 rows of 3: not a multiple of 5
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            builder = tf.compat.v1.saved_model.Builder(folder)
            builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={
                "serving_default": tf.compat.v1.saved_model.predict_signature_def(
                    {"x": x}, {"y": y})})
            builder.save()
    model = SignatureModel(folder, _meta(folder), "serve", "serving_default")
    with pytest.raises(InputError, match=r"fails on verification's sample inputs at node "
                                         r"'y'.*--no-verify"):
        model.run_reference(None, {"x:0": np.ones((2, 3), np.float32)}, ["y:0"])
