"""verify on the user's data, golden outputs and quantization to a target, through the CLI on
the sample CNN checkpoint (16x16x3 images, 5 classes)."""

from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def cnn_data(samples, tmp_path_factory):
    """(checkpoint prefix, val.npz labelled by the original's own top class, so its accuracy is
    100%)."""
    import tensorflow as tf
    from graphfreeze.convert import Request, execute, prepare

    ckpt = samples / "cnn_v2" / "model.ckpt-200"
    folder = tmp_path_factory.mktemp("cnn_data")
    x = np.random.default_rng(0).standard_normal((96, 16, 16, 3)).astype(np.float32)
    np.savez(folder / "x.npz", images=x)
    written = execute(prepare(Request(str(ckpt), outputs=("probs",), targets=("tflite",),
                                      output=str(folder / "f.tflite"),
                                      stage_options={"verify_data": str(folder / "x.npz")})))
    interp = tf.lite.Interpreter(model_path=written[0].path)
    interp.resize_tensor_input(0, x.shape)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    labels = interp.get_tensor(interp.get_output_details()[0]["index"]).argmax(-1)
    np.savez(folder / "val.npz", images=x, labels=labels)
    return ckpt, folder / "val.npz"


def _sidecar(path):
    return json.loads(open(f"{path}.json").read())


def test_verify_data_gives_accuracy_and_per_output_tolerances(cnn_data, freeze, tmp_path):
    ckpt, val = cnn_data
    out = tmp_path / "m.tflite"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "tflite", "-o", out,
                    "--verify-data", val, "--tolerance", "probs=1e-4", "--rtol", "1e-3",
                    "--check-stat", "p99", "--max-accuracy-drop", "0%")
    assert result.exit_code == 0, result.output
    check = _sidecar(out)["verification"]
    assert check["data"] == f"{val} (96 rows)" and check["batch_size"] == 96
    assert check["accuracy"] == {"output": "probs:0", "rows": 96, "original": 1.0,
                                 "artifact": 1.0, "drop": 0.0}
    assert check["check_stat"] == "p99" and check["tolerance"] == "probs=1e-4"
    assert f"compared with the original on {val} (96 rows)" in result.output
    assert "top-1 accuracy on 96 labelled rows: original 100.00%" in result.output
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "tflite", "-o", out,
                    "--tolerance", "boxes=1e-2", "--force")
    assert result.exit_code == 6 and "name output(s) boxes, which the model does not have" \
        in result.output


def test_int8_calibrates_on_the_verify_data_and_the_drop_is_judged(cnn_data, freeze, tmp_path):
    ckpt, val = cnn_data
    out = tmp_path / "q.tflite"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o", out,
                    "--verify-data", val, "--max-accuracy-drop", "100%")
    assert result.exit_code == 0, result.output
    car = _sidecar(out)
    assert car["calibration"] == str(val) and "synthetic" not in result.output
    assert car["verification"]["accuracy"]["drop"] >= 0
    bad = tmp_path / "bad.npz"
    np.savez(bad, images=np.zeros((4, 16, 16, 3), np.float32), labels=np.array([0, 1, 2, 9]))
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "tflite", "-o",
                    tmp_path / "b.tflite", "--verify-data", bad)
    assert result.exit_code == 3 and "labels go up to 9, but output 'probs:0' has 5 classes" \
        in result.output
    assert not (tmp_path / "b.tflite").exists()


def test_keep_float_per_tensor_and_io_types(cnn_data, freeze, tmp_path):
    import tensorflow as tf

    ckpt, val = cnn_data
    out = tmp_path / "k.tflite"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o", out,
                    "--calibration", val, "--keep-float", "CONV_2D", "--per-tensor",
                    "--io-type", "uint8")
    assert result.exit_code == 0, result.output
    interp = tf.lite.Interpreter(model_path=str(out))
    assert interp.get_input_details()[0]["dtype"] == np.uint8
    convs = [op for op in interp._get_ops_details() if op["op_name"] == "CONV_2D"]
    tensors = {t["index"]: t for t in interp.get_tensor_details()}
    assert convs and all(tensors[int(op["outputs"][0])]["dtype"] == np.float32 for op in convs)
    assert _sidecar(out)["keep_float"] == ["CONV_2D"] and _sidecar(out)["per_tensor"] is True
    averaged = tmp_path / "a.tflite"
    # averaged ranges clip what lies beyond the images' usual range: judged on the images
    # (seeded noise goes beyond it: an rmse of 2-3 % of the probabilities' range)
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o", averaged,
                    "--calibration", val, "--calibration-ranges", "average", "--verify-data", val)
    assert result.exit_code == 0, result.output
    assert _sidecar(averaged)["calibration_ranges"] == "average"
    minmax = tmp_path / "m.tflite"
    assert freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o", minmax,
                  "--calibration", val).exit_code == 0
    assert _sidecar(minmax)["calibration_ranges"] == "minmax"
    scales = [_sidecar(p)["tflite_io"]["outputs"]["probs"]["scale"] for p in (minmax, averaged)]
    assert averaged.read_bytes() != minmax.read_bytes() and scales[0] >= scales[1]
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o",
                    tmp_path / "b.tflite", "--calibration-ranges", "median")
    assert result.exit_code == 6 and "--calibration-ranges 'median': choose minmax or average" \
        in result.output
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o",
                    tmp_path / "n.tflite", "--calibration", val, "--keep-float", "sequential/dens")
    assert result.exit_code == 3 and "--keep-float sequential/dens matches no layer" in result.output
    assert "did you mean sequential/dense" in result.output
    assert not (tmp_path / "n.tflite").exists()


def test_quantize_until_keeps_the_worst_layers_in_float_until_it_passes(cnn_data, freeze,
                                                                        tmp_path):
    import hashlib

    ckpt, val = cnn_data
    out = tmp_path / "u.tflite"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o", out,
                    "--verify-data", val, "--io-type", "float", "--quantize-until", "0.0003")
    assert result.exit_code == 0, result.output
    car = _sidecar(out)
    search = car["verification"]["quantize_until"]
    kept = len(search["kept_float"])
    assert 0 < kept <= search["layers"] and search["steps"][0]["kept"] == 0
    assert not search["steps"][0]["passed"]
    assert [s for s in search["steps"] if s["kept"] == kept][0]["passed"]
    assert all(not s["passed"] for s in search["steps"] if s["kept"] < kept)
    assert car["verification"]["metrics"]["probs:0"]["mean_abs_diff"] <= 0.0003
    ranges = [step.get("ranges") for step in search["steps"][:2]]
    assert ranges == ["minmax", "average"]  # the other ranges are tried before any float layer
    assert car["calibration_ranges"] == search["calibration_ranges"]
    assert car["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()  # the chosen bytes
    assert f"quantize-until: {kept} of {search['layers']} layers kept in float" in result.output
    everything = tmp_path / "all.tflite"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o",
                    everything, "--verify-data", val, "--io-type", "float", "--quantize-until",
                    "1e-6")
    assert result.exit_code == 0, result.output
    assert "met only with every layer in float: nothing is quantized" in result.output
    never = tmp_path / "never.tflite"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o", never,
                    "--verify-data", val, "--quantize-until", "1e-9", "--quantize-rounds", "2")
    assert result.exit_code == 5 and "--quantize-until mean |diff| 1e-09 not met after 2 " \
        "conversion(s): the best reached keeps" in result.output
    assert not never.exists() and not (tmp_path / "never.tflite.json").exists()


def test_golden_outputs_verify_without_the_original_and_refuse_another_models(
        cnn_data, samples, freeze, tmp_path):
    ckpt, val = cnn_data
    golden = tmp_path / "golden"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "android", "-o",
                    tmp_path / "a.pb", "--verify-data", val, "--save-golden", golden)
    assert result.exit_code == 0, result.output
    record = json.loads((golden / "golden.json").read_text())
    assert record["rows"] == 96 and record["labels"] and record["inputs"][0]["name"] == "images:0"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "tflite", "-o",
                    tmp_path / "g.tflite", "--golden", golden)
    assert result.exit_code == 0, result.output
    assert "compared with golden outputs on the golden inputs in" in result.output
    assert _sidecar(tmp_path / "g.tflite")["verification"]["accuracy"]["artifact"] == 1.0
    result = freeze("--ckpt", samples / "iris" / "model.ckpt-200", "--outputs", "probs",
                    "-o", tmp_path / "i.pb", "--golden", golden)
    assert result.exit_code == 3 and "golden outputs of another model: this model's input " \
        "'x:0' is not in them (they have images:0)" in result.output
    assert not (tmp_path / "i.pb").exists()


def test_nan_in_the_artifact_fails_and_in_the_original_is_said_once():
    from graphfreeze.errors import VerificationError
    from graphfreeze.stages.verify import judge
    from graphfreeze.stages.verify.options import VerifyOptions
    from graphfreeze.tensors import TensorInfo

    out = TensorInfo("probs:0", "float32", (None, 2))
    expected = np.array([[0.1, 0.9], [0.5, 0.5]], np.float32)
    got = expected.copy()
    got[0, 0] = np.nan
    options = VerifyOptions(tolerance=float("inf"))
    metrics = judge.output_metrics(out, expected, got, options)
    assert judge.failure(metrics, options, "probs:0") == \
        "is NaN or infinite in 1 value(s) where the original is finite"
    with pytest.raises(VerificationError, match="the original itself produces NaN or Inf in "
                                                "output 'probs:0' \\(1 value\\(s\\)\\) on seeded"):
        judge.original_is_finite([out], [got], "seeded inputs")


def test_tolerance_specs_and_statistics():
    from graphfreeze.options import OptionValueError
    from graphfreeze.stages.verify import judge
    from graphfreeze.stages.verify.options import VerifyOptions

    options = VerifyOptions(tolerance="1e-3,probs=1e-4", rtol="boxes=0.1")
    assert options.tolerance_for("probs:0") == (1e-4, 0.0)
    assert options.tolerance_for("boxes:0") == (1e-3, 0.1)
    assert VerifyOptions(tolerance="2e-3").tolerance == 2e-3  # a plain number from a flag
    expected = np.array([1.0, 10.0, 100.0])
    got = expected + np.array([0.5, 0.5, 5.0])
    assert judge.error_stat(expected, got, 0.0, "max") == 5.0
    assert judge.error_stat(expected, got, 0.05, "max") == pytest.approx(0.45)
    assert judge.error_stat(expected, got, 0.0, "median") == 0.5
    assert judge.error_stat(expected, got, 0.0, "p50") == 0.5
    for bad in ({"tolerance": "probs="}, {"check_stat": "p200"}, {"max_accuracy_drop": "x%"},
                {"quantize_until": "-1"}, {"golden": "a", "save_golden": "b"}):
        with pytest.raises(OptionValueError):
            VerifyOptions(**bad)


def test_a_folder_of_images_verifies_and_calibrates_and_its_classes_must_fit(cnn_data, freeze,
                                                                             tmp_path):
    import tensorflow as tf

    ckpt, _ = cnn_data
    rng = np.random.default_rng(2)
    images = tmp_path / "images"
    for k in range(5):
        (images / f"{k}_class").mkdir(parents=True)
        for j in range(3):
            pixels = rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)  # resized to 16x16
            (images / f"{k}_class" / f"{j}.png").write_bytes(tf.io.encode_png(pixels).numpy())
    out = tmp_path / "i.tflite"
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o", out,
                    "--verify-data", images, "--image-scale", "1/127.5", "--image-mean", "1")
    assert result.exit_code == 0, result.output
    car = _sidecar(out)
    assert car["calibration"] == str(images)
    assert car["verification"]["data"] == f"{images} (15 rows)"
    assert car["verification"]["accuracy"]["rows"] == 15
    (images / "5_extra").mkdir()
    (images / "5_extra" / "x.png").write_bytes((images / "0_class" / "0.png").read_bytes())
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "tflite", "-o",
                    tmp_path / "j.tflite", "--verify-data", images)
    assert result.exit_code == 3 and "6 class folders (0_class, 1_class, 2_class, ...) do not " \
        "match output 'probs:0' with 5 classes" in result.output


def test_an_accuracy_goal_without_labels_and_golden_with_other_data_are_one_line(
        cnn_data, freeze, tmp_path):
    ckpt, _ = cnn_data
    plain = tmp_path / "plain.npz"
    np.savez(plain, images=np.zeros((4, 16, 16, 3), np.float32))
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "--target", "edge-int8", "-o",
                    tmp_path / "a.tflite", "--verify-data", plain, "--quantize-until", "1%")
    assert result.exit_code == 3 and "--quantize-until 1.00% top-1 drop is a top-1 accuracy " \
        "drop, which needs labelled data" in result.output
    result = freeze("--ckpt", ckpt, "--outputs", "probs", "-o", tmp_path / "b.pb",
                    "--golden", tmp_path, "--verify-data", plain)
    assert result.exit_code == 6 and "give --golden alone" in result.output
