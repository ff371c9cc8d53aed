"""The onnx-int8 and onnx-fp16 targets on real sample models, through the CLI."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from graphfreeze.formats.onnx.export import OnnxOptions
from graphfreeze.formats.onnx.quantize import topo_sort

STEM = "model.ckpt-200"


@pytest.fixture(scope="module")
def cnn(samples, tmp_path_factory):
    """The sample CNN converted once to onnx, onnx-int8 and onnx-fp16 (--explain: every probe
    runs too): (output folder, CLI output)."""
    from graphfreeze_cli.main import main

    out = tmp_path_factory.mktemp("quantized")
    result = CliRunner().invoke(main, ["--ckpt", str(samples / "cnn_v2"), "--outputs", "probs",
                                       "--target", "onnx,onnx-int8,onnx-fp16", "--explain",
                                       "-o", f"{out}/"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out, result.output


def _sidecar(out, target: str) -> dict:
    name = f"{STEM}.onnx" if target == "onnx" else f"{STEM}.{target}.onnx"
    return json.loads((out / f"{name}.json").read_text())


def test_int8_is_smaller_verified_qdq_and_records_its_calibration(cnn):
    out, output = cnn
    car, float_car = _sidecar(out, "onnx-int8"), _sidecar(out, "onnx")
    assert car["bytes"] < float_car["bytes"]
    check = car["verification"]
    assert check["passed"] and check["rmse_range"] == 0.025
    assert check["metrics"]["probs:0"]["mean_abs_diff"] < 0.01
    assert check["metrics"]["probs:0"]["top1_agreement"] >= 0.9
    ops = car["onnx_op_counts"]
    assert ops["QuantizeLinear"] > 0 and ops["DequantizeLinear"] > ops["QuantizeLinear"]
    assert car["quantize"] == "int8" and car["calibration"] == "synthetic"
    assert float_car["quantize"] == "none" and "calibration" not in float_car
    assert "onnx-int8: calibrated on 100 synthetic random inputs" in output
    model = onnx.load(str(out / f"{STEM}.onnx-int8.onnx"))
    weights = {t.name: t for t in model.graph.initializer}
    kernels = [t for t in weights.values() if t.data_type == onnx.TensorProto.INT8 and
               len(t.dims) > 1]
    assert kernels and all(len(weights[k.name[:-len("_quantized")] + "_scale"].dims) == 1
                           for k in kernels), "per-channel weight scales"


def test_fp16_has_half_weights_and_float32_io(cnn):
    out, _ = cnn
    car = _sidecar(out, "onnx-fp16")
    assert car["quantize"] == "fp16" and "calibration" not in car
    assert car["verification"]["passed"] and car["verification"]["tolerance"] == 1e-2
    assert 0 < car["verification"]["max_abs_diff"]["probs:0"] < 1e-2
    assert car["bytes"] < 0.8 * _sidecar(out, "onnx")["bytes"]
    model = onnx.load(str(out / f"{STEM}.onnx-fp16.onnx"))
    types = {t.data_type for t in model.graph.initializer if len(t.dims) > 1}
    assert types == {onnx.TensorProto.FLOAT16}
    assert [v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.output)] == \
        [onnx.TensorProto.FLOAT] * 2


def test_the_divergence_locator_reads_the_quantized_models(cnn):
    """A Relu the quantizer folds into the next QuantizeLinear keeps its name on the clipped
    value, so no false divergence; float16 tensors compare as float."""
    out, output = cnn
    for target in ("onnx-int8", "onnx-fp16"):
        found = _sidecar(out, target)["verification"]["divergence"]
        assert found["available"] and found["compared"] >= 5 and found["diverged"] == 0, found
    assert output.count("every compared tensor agrees") == 3


def test_int8_calibrates_on_the_given_file(samples, freeze, tmp_path):
    data = np.random.default_rng(0).uniform(-3, 5, (20, 16, 16, 3)).astype(np.float32)
    calib = tmp_path / "calib.npz"
    np.savez(calib, images=data)
    out = tmp_path / "m.onnx"
    result = freeze("--ckpt", samples / "cnn_v2", "--outputs", "probs", "--target", "onnx-int8",
                    "--calibration", calib, "-o", out)
    assert result.exit_code == 0, result.output
    assert "synthetic" not in result.output
    car = json.loads((tmp_path / "m.onnx.json").read_text())
    assert car["calibration"] == str(calib) and car["verification"]["passed"]
    model = onnx.load(str(out))
    (layout,) = [n for n in model.graph.node if n.input == ["images:0"]]  # NHWC -> NCHW
    (q,) = [n for n in model.graph.node if n.op_type == "QuantizeLinear" and
            n.input[0] == layout.output[0]]
    scale = next(t for t in model.graph.initializer if t.name == q.input[1])
    want = (max(data.max(), 0) - min(data.min(), 0)) / 255
    np.testing.assert_allclose(onnx.numpy_helper.to_array(scale), want, rtol=1e-5)


def test_int8_keeps_a_qat_models_learned_ranges(zoo, freeze, tmp_path):
    """qat_cnn: every weighted op has learned ranges, so int8 is the onnx target's model;
    qat_annotated (only its convolutions QAT): the Dense stays float, as TFLiteConverter (and
    edge-int8) keep it, and a warning says so."""
    for name, kept in (("qat_cnn", None), ("qat_annotated", ["model/probs/MatMul"])):
        path, args = zoo(name)
        result = freeze(path, *args, "--target", "onnx,onnx-int8", "-o", f"{tmp_path / name}/")
        assert result.exit_code == 0, result.output
        cars = {t: json.loads((tmp_path / name / f"model.{f}.json").read_text())
                for t, f in (("onnx", "onnx"), ("onnx-int8", "onnx-int8.onnx"))}
        car = cars["onnx-int8"]
        assert car["verification"]["passed"] and car["quantization"].startswith("qat")
        assert car.get("kept_float") == kept and "calibration" not in car
        assert car["sha256"] == cars["onnx"]["sha256"]
        assert ("onnx-int8: 1 op(s) the QAT model does not annotate (model/probs/MatMul) stay "
                "float" in " ".join(result.output.split())) == bool(kept), result.output


def test_int8_calibrates_token_ids_within_the_vocabulary(family, freeze, tmp_path,
                                                          monkeypatch):
    """A keras-hub BERT: seeded calibration draws segment ids below 2 and token ids below the
    vocabulary (onnxruntime's calibrator ran a gather out of its table); data with ids past
    the vocabulary is one line, nothing written."""
    path, args = family("hub_bert_export")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "onnx-int8", "--no-verify", "-o", "ids/")
    assert result.exit_code == 0, result.output
    assert json.loads(next(path.parent.glob("ids/*.onnx.json")).read_text())["calibration"] == \
        "synthetic"
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "past.npz", token_ids=rng.integers(0, 200, (4, 16)).astype(np.int32),
             segment_ids=np.zeros((4, 16), np.int32), padding_mask=np.ones((4, 16), np.int32))
    result = freeze(path.name, *args, "--target", "onnx-int8", "--no-verify", "--calibration",
                    tmp_path / "past.npz", "-o", f"{tmp_path}/refused/")
    assert result.exit_code == 3 and "token id 199" in result.output and \
        "vocabulary of 100" in result.output, result.output
    assert not (tmp_path / "refused").exists()


def test_targets_lists_both_and_quantize_is_checked(freeze):
    result = freeze("targets")
    assert result.exit_code == 0 and "onnx-int8" in result.output and "onnx-fp16" in result.output
    with pytest.raises(ValueError, match="^quantize 'int4': choose one of none, int8, fp16$"):
        OnnxOptions(quantize="int4")


def test_topo_sort_moves_nodes_after_what_they_read_and_keeps_the_rest():
    from onnx import helper

    nodes = [helper.make_node("Relu", ["c"], ["d"], name="late"),
             helper.make_node("Cast", ["x"], ["c"], name="cast", to=10),
             helper.make_node("Relu", ["x"], ["e"], name="free")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [1])], [])
    topo_sort(graph)
    assert [n.name for n in graph.node] == ["cast", "late", "free"]
