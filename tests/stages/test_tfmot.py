"""issue 14: tensorflow-model-optimization models on the TFLite targets. A QAT model converts
with the ranges it learned (no calibration set) to int8 as TensorFlow's own converter does;
a pruned model keeps its zeros and a clustered one its few values in the artifact; a converter
that fails on a model says where, in its own words (exit 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from graphfreeze.errors import InputError
from graphfreeze.formats.tflite.convert import run_converter
from graphfreeze.formats.tflite.interpreter import interpreter


def convert(zoo, freeze, tmp_path, name: str, targets: str) -> dict:
    """{target: (artifact path, sidecar)} for zoo model NAME (exit 0 asserted)."""
    path, args = zoo(name)
    out = tmp_path / name
    result = freeze(path, *args, "--target", targets, "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    found = {}
    for car in out.glob("*.json"):
        data = json.loads(car.read_text())
        found[data["target"]] = (out / data["file"], data)
    return found


def run_rows(path, x: np.ndarray) -> np.ndarray:
    """The .tflite at `path` on each row of `x`, inputs/outputs (de)quantized."""
    interp = interpreter(model_path=str(path))
    interp.allocate_tensors()
    (inp,), (out,) = interp.get_input_details(), interp.get_output_details()
    rows = []
    for row in x:
        value = row[None]
        if inp["dtype"] == np.int8:
            scale, zero = inp["quantization"]
            value = np.clip(np.round(value / scale + zero), -128, 127).astype(np.int8)
        interp.set_tensor(inp["index"], value)
        interp.invoke()
        got = interp.get_tensor(out["index"])
        if out["dtype"] == np.int8:
            scale, zero = out["quantization"]
            got = (got.astype(np.float32) - zero) * scale
        rows.append(got)
    return np.concatenate(rows)


def weights(path) -> dict:
    """{tensor name: value} of a .tflite's constant tensors of rank >= 2 (kernels)."""
    interp = interpreter(model_path=str(path))
    interp.allocate_tensors()
    made = {int(i) for op in interp._get_ops_details() for i in op["outputs"]}  # noqa: SLF001
    inputs = {d["index"] for d in interp.get_input_details()}
    found = {}
    for d in interp.get_tensor_details():
        if d["index"] in made or d["index"] in inputs or len(d["shape"]) < 2:
            continue
        found[d["name"]] = interp.get_tensor(d["index"])
    return found


@pytest.fixture(scope="module")
def qat(zoo, tmp_path_factory):
    """The QAT zoo model, the peer (TFLiteConverter.from_keras_model, optimizations=[DEFAULT])
    and the Keras model's own outputs on seeded inputs."""
    import tensorflow as tf
    import tensorflow_model_optimization as tfmot
    import tf_keras

    path, _ = zoo("qat_cnn")
    with tfmot.quantization.keras.quantize_scope():
        model = tf_keras.models.load_model(path)
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    peer = tmp_path_factory.mktemp("peer") / "peer.tflite"
    peer.write_bytes(conv.convert())
    x = np.random.default_rng(7).random((32, 28, 28, 1), dtype=np.float32)
    return {"x": x, "keras": model.predict(x, verbose=0), "peer": peer}


def test_qat_edge_int8_uses_the_learned_ranges_and_is_int8(zoo, freeze, tmp_path, qat):
    found = convert(zoo, freeze, tmp_path, "qat_cnn", "edge-int8,tflite,tflite-dynamic")
    path, car = found["edge-int8"]
    assert car["verification"]["passed"] and "calibration" not in car, car
    assert car["quantization"].startswith("qat")
    assert not any("synthetic" in w for w in car.get("warnings", [])), car.get("warnings")
    io = car["tflite_io"]
    assert {v["dtype"] for role in io.values() for v in role.values()} == {"int8"}, io
    interp = interpreter(model_path=str(path))
    kinds = {d["dtype"].__name__ for d in interp.get_tensor_details()}
    assert kinds <= {"int8", "int32"}, kinds  # every activation and weight integer
    for target in ("tflite", "tflite-dynamic"):  # what TFLiteConverter makes of a QAT model
        path, car = found[target]
        assert car["verification"]["passed"], car["verification"]
        assert set(weights(path)) and {str(v.dtype) for v in weights(path).values()} == {"int8"}
        assert path.stat().st_size <= 1.1 * qat["peer"].stat().st_size  # int8, not Q/DQ float
    keras, ours, peer = qat["keras"], run_rows(found["edge-int8"][0], qat["x"]), run_rows(
        qat["peer"], qat["x"])
    assert (ours.argmax(1) == keras.argmax(1)).mean() >= (peer.argmax(1) == keras.argmax(1)).mean()
    model, args = zoo("qat_cnn")  # int8 ranges learned in training are no 16x8 quantization
    result = freeze(model, *args, "--target", "edge-int16x8", "-o", tmp_path / "x.tflite")
    assert result.exit_code == 3 and "which 16x8 quantization cannot use; use edge-int8" in \
        result.output


def test_qat_edge_int8_is_as_accurate_as_tensorflows_converter(zoo, freeze, tmp_path, qat):
    path, _ = convert(zoo, freeze, tmp_path, "qat_cnn", "edge-int8")["edge-int8"]
    keras = qat["keras"]
    ours, peer = run_rows(path, qat["x"]), run_rows(qat["peer"], qat["x"])
    assert np.abs(ours - keras).mean() <= np.abs(peer - keras).mean() * 1.001


def test_a_converter_failure_names_the_node_in_its_own_words(zoo, freeze, tmp_path):
    """Calibrating a QAT graph anew (what edge-int8 did before) trips the converter's
    same-scale constraint on MaxPool: an InputError with the node, not exit 4."""
    import tensorflow as tf

    found = convert(zoo, freeze, tmp_path, "qat_cnn", "android")
    graph_def = tf.compat.v1.GraphDef.FromString(found["android"][0].read_bytes())
    conv = tf.compat.v1.lite.TFLiteConverter(graph_def, None, None,
                                             input_arrays_with_shape=[("image", [1, 28, 28, 1])],
                                             output_arrays=["probs"])
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(0)
    conv.representative_dataset = lambda: ([rng.random((1, 28, 28, 1), np.float32)]
                                           for _ in range(4))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    with pytest.raises(InputError) as err:
        run_converter(conv, "model.h5", False)
    text = str(err.value)
    assert err.value.exit_code == 3 and "\n" not in text
    assert text.startswith("model.h5: the TFLite converter fails on the model at node "), text
    assert "MaxPool" in text and "'tfl.max_pool_2d' op quantization parameters violate the " \
        "same scale constraint" in text and "!quant" not in text, text


def test_pruned_kernels_keep_their_zeros(zoo, freeze, tmp_path):
    found = convert(zoo, freeze, tmp_path, "pruned_cnn", "tflite,tflite-dynamic,edge-int8")
    for target, (path, car) in found.items():
        assert car["verification"]["passed"], (target, car["verification"])
        kernels = weights(path)
        assert len(kernels) == 3, (target, sorted(kernels))
        for name, value in kernels.items():  # pruned to 50 % sparsity, kept through folding
            assert (value == 0).mean() >= 0.45, (target, name, (value == 0).mean())


def test_clustered_kernels_keep_their_few_values(zoo, freeze, tmp_path):
    """8 clusters per kernel; a batch norm folded into a kernel scales each output channel, so
    the few values hold per output channel (TFLite keeps channels first)."""
    found = convert(zoo, freeze, tmp_path, "clustered_cnn", "tflite,tflite-dynamic")
    for target, (path, car) in found.items():
        assert car["verification"]["passed"], (target, car["verification"])
        kernels = weights(path)
        assert len(kernels) == 3, (target, sorted(kernels))
        for name, value in kernels.items():
            per_channel = max(len(np.unique(channel)) for channel in value)
            assert per_channel <= 8, (target, name, per_channel)
            if "FusedBatchNorm" not in name:
                assert len(np.unique(value)) <= 8, (target, name, len(np.unique(value)))


def test_a_partly_qat_model_keeps_what_is_not_annotated_float(zoo, freeze, tmp_path):
    """quantize_annotate_layer on some layers: edge-int8 keeps the learned ranges and leaves
    the other ops float (saying which), as TFLiteConverter does: nothing is calibrated on
    synthetic data, so the artifact matches the QAT model as closely as the peer's."""
    path, car = convert(zoo, freeze, tmp_path, "qat_annotated", "edge-int8")["edge-int8"]
    assert car["verification"]["passed"], car["verification"]
    assert car["quantization"].startswith("qat") and "kept float" in car["quantization"]
    assert "calibration" not in car, car
    assert any("does not annotate" in w for w in car.get("warnings", [])), car
    assert max(m["mean_abs_diff"] for m in car["verification"]["metrics"].values()) < 1e-4, car
    tensors = interpreter(model_path=str(path)).get_tensor_details()
    kinds = {d["dtype"].__name__ for d in tensors}
    assert "int8" in kinds and "float32" in kinds, kinds
