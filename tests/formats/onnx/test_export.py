"""export_onnx called directly on a real frozen and stripped sample graph (no CLI)."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from graphfreeze.formats.onnx import export as onnx_export
from graphfreeze.formats.onnx.export import OnnxOptions, canonical_names, unmapped_ops
from graphfreeze.graph.session import run_graph_def
from graphfreeze.tensors import sample_inputs

from tests.formats.tflite.test_export import export, graph_state


@pytest.fixture(scope="module")
def cnn(samples):
    return graph_state(samples / "cnn_v2")


def test_export_writes_a_checked_model_whose_runner_matches_the_frozen_graph(cnn, tmp_path):
    path = tmp_path / "cnn.onnx"
    done, txn = export(cnn, onnx_export.run, OnnxOptions(), path, "onnx")
    with txn:
        artifact = done.artifact
        assert artifact.format.name == "onnx" and artifact.facts["external_data"] is None
        assert artifact.facts["opset"] >= 13
        assert artifact.facts["onnx_node_count"] == sum(artifact.facts["onnx_op_counts"].values())
        assert "Conv" in artifact.facts["onnx_op_counts"]
        assert [(i.name, i.shape) for i in artifact.inputs] == [("images:0", (None, 16, 16, 3))]
        feeds = sample_inputs(artifact.inputs, 3, seed=2)
        (got,) = artifact.open().run(feeds)  # onnx.checker, then onnxruntime on the staged file
        (want,) = run_graph_def(cnn.graph_def, feeds, ["probs:0"])
        np.testing.assert_allclose(got, want, atol=1e-5)
        txn.commit()
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == artifact.sha256 and len(data) == artifact.size
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == ["images:0"]
    assert [o.name for o in model.graph.output] == ["probs:0"]
    assert unmapped_ops(model) == []


def test_conversion_is_deterministic_and_generated_names_are_renumbered(cnn):
    import re

    from tf2onnx import utils

    first = onnx_export.to_onnx(cnn, 13)
    utils.INTERNAL_NAME = 5000  # as after many conversions in one process
    second = onnx_export.to_onnx(cnn, 13)
    assert first.SerializeToString(deterministic=True) == \
        second.SerializeToString(deterministic=True)
    keep = {n.name for n in cnn.graph_def.node}
    numbers = {int(m) for n in first.graph.node for name in (n.name, *n.output)
               if name.split(":")[0] not in keep for m in re.findall(r"__(\d+)", name)}
    assert numbers and max(numbers) <= len(first.graph.node) + len(first.graph.initializer)
    names = [t.name for t in first.graph.initializer]
    assert names == sorted(names)


def test_canonical_names_renumber_in_order_of_appearance():
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["Conv__21:0"], name="Conv__21"),
             helper.make_node("Add", ["Conv__21:0", "const_fold_opt__99"], ["keep__7"],
                              name="keep__7"),
             helper.make_node("Identity", ["keep__7"], ["unk__3"], name="unk__3")]
    weight = helper.make_tensor("const_fold_opt__99", TensorProto.FLOAT, [1], [1.0])
    other = helper.make_tensor("a_weight__50", TensorProto.FLOAT, [1], [2.0])
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, ["unk__3"])],
                              [helper.make_tensor_value_info("unk__3", 1, ["unk__3"])],
                              initializer=[weight, other])
    model = helper.make_model(graph)
    canonical_names(model, keep={"x", "keep__7"})
    g = model.graph
    # value infos first (input x, output unk__3 and its dim), then nodes, then initializers
    assert [n.name for n in g.node] == ["Conv__2", "keep__7", "unk__1"]
    assert list(g.node[1].input) == ["Conv__2:0", "const_fold_opt__3"]
    assert g.output[0].name == "unk__1"
    assert g.input[0].type.tensor_type.shape.dim[0].dim_param == "unk__1"
    assert [t.name for t in g.initializer] == ["a_weight__4", "const_fold_opt__3"]


def test_unmapped_ops_lists_what_no_opset_defines():
    from onnx import helper

    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Igamma", ["a", "a"], ["b"]),
             helper.make_node("FusedConv", ["b"], ["c"], domain="com.microsoft"),
             helper.make_node("Cumprod", ["c"], ["d"], domain="ai.onnx.contrib"),
             helper.make_node("LabelEncoder", ["d"], ["e"], domain="ai.onnx.ml")]
    model = helper.make_model(helper.make_graph(nodes, "g", [], []))
    assert unmapped_ops(model) == ["Igamma", "ai.onnx.contrib:Cumprod"]


def test_large_weights_go_to_an_external_data_file(cnn, tmp_path):
    path = tmp_path / "ext.onnx"
    done, txn = export(cnn, onnx_export.run, OnnxOptions(external_data_bytes=1024), path,
                         "onnx")
    with txn:
        artifact = done.artifact
        assert artifact.facts["external_data"] == "ext.onnx.data"
        assert artifact.summary == ("weights in ext.onnx.data (keep it beside the model)",)
        feeds = sample_inputs(artifact.inputs, 2, seed=4)
        (got,) = artifact.open().run(feeds)
        txn.commit()
    (want,) = run_graph_def(cnn.graph_def, feeds, ["probs:0"])
    np.testing.assert_allclose(got, want, atol=1e-5)
    data = (tmp_path / "ext.onnx.data").stat().st_size
    assert data >= 512 * 5 * 4 and artifact.size == data + path.stat().st_size
    model = onnx.load(str(path), load_external_data=False)
    external = [t.name for t in model.graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL]
    assert len(external) >= 1


def test_opset_outside_the_install_is_refused_with_the_options():
    from graphfreeze.formats.onnx.gaps import MIN_OPSET, newest_opset

    with pytest.raises(ValueError, match=rf"^opset 8: this install converts opsets {MIN_OPSET} "
                                         rf"to {newest_opset()}$"):
        OnnxOptions(opset=8)  # named by field: the caller spells it (--opset, or opset = 8)
    assert OnnxOptions(opset=newest_opset()).opset == newest_opset()


def _zoo_to_onnx(zoo, freeze, tmp_path, name: str, *extra: str):
    import json

    path, args = zoo(name)
    out = tmp_path / f"{name}.onnx"
    result = freeze(path, *args, "--target", "onnx", "-o", out, *extra)
    assert result.exit_code == 0, result.output
    return onnx.load(str(out)), json.loads(out.with_name(out.name + ".json").read_text())


@pytest.mark.parametrize("name", ["transformer_encoder", "transformer_gelu_tanh",
                                  "lstm_addition"])
def test_zoo_text_models_convert_and_verify(zoo, freeze, tmp_path, name):
    """Issue 14: exact GELU's Erfc (rewritten as 1 - Erf), tanh GELU, a Keras 3 LSTM seq2seq."""
    model, car = _zoo_to_onnx(zoo, freeze, tmp_path, name)
    assert car["verification"]["passed"]
    assert max(car["verification"]["max_abs_diff"].values()) < 1e-5
    assert unmapped_ops(model) == []
    if name == "transformer_encoder":
        assert "Erf" in car["onnx_op_counts"] and "Erfc" not in car["op_counts"]


def test_zoo_qat_model_keeps_its_fake_quantization(zoo, freeze, tmp_path):
    """Issue 14: a tfmot QAT CNN (was max |diff| 6.2e-3 through tf2onnx's FakeQuant handler,
    which skips TensorFlow's nudge): Q/DQ with the nudged ranges, weights as int8."""
    model, car = _zoo_to_onnx(zoo, freeze, tmp_path, "qat_cnn")
    assert car["verification"]["passed"]
    assert max(car["verification"]["max_abs_diff"].values()) < 1e-6
    ops = car["onnx_op_counts"]
    assert ops["QuantizeLinear"] == 4 and ops["DequantizeLinear"] >= 6
    assert car["int8_weights"] == 2  # the quantized Conv and Dense kernels
    int8 = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert sum(len(t.dims) > 1 for t in int8) == 2  # kernels; the rest are zero points


def test_zoo_qat_annotated_differs_only_by_rounding_ties(zoo, freeze, tmp_path):
    """quantize_annotate_layer on the convolutions: the only difference left is an activation a
    hair from a rounding boundary (the convolutions' float sums differ in the last bit between
    TensorFlow and onnxruntime), one quantization step on a few of ~10^4 elements (max |diff|
    5.5e-4 on the probabilities). Judged as quantized artifacts are (rmse share, top-1), it
    verifies at the target's own settings."""
    _, car = _zoo_to_onnx(zoo, freeze, tmp_path, "qat_annotated")
    metrics = car["verification"]["metrics"]["probs:0"]
    assert metrics["max_abs_diff"] < 2e-3 and metrics["top1_agreement"] == 1.0
    assert car["verification"]["rmse_range"] == 0.025 and car["quantization"].startswith("qat")
