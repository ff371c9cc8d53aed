"""Detectors (issue 24): Model Garden's TFLite post-processing composite reaches TFLite's
converter intact and is verified against a reference of the op, not its zero stand-in; targets
without the op refuse in one line; a batched NMS in a While converts to ONNX and the server
SavedModel; edge-int8 of a detector without real calibration images is refused."""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_bad_input import assert_failed


def test_tflite_post_processing_becomes_the_custom_op(family, freeze, tmp_path, monkeypatch):
    from ai_edge_litert.interpreter import Interpreter

    path, args = family("detector_tflite_nms")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "tflite", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    model = tmp_path / "saved_model.tflite"
    ops = {op["op_name"] for op in Interpreter(model_path=str(model))._get_ops_details()}  # noqa: SLF001
    assert "TFLite_Detection_PostProcess" in ops and "CONV_2D" in ops, ops
    car = json.loads((tmp_path / "saved_model.tflite.json").read_text())
    assert car["verification"]["passed"], car["verification"]
    assert set(car["composites"].values()) == {"TFLite_Detection_PostProcess"}
    # compared with the op's reference on real detections, not with the stand-in's zeros
    assert "NumPy reference" in result.output and "stand-in" in result.output
    assert car["verification"]["max_abs_diff"]["detection_boxes:0"] < 1e-3


def test_post_processing_stand_in_is_refused_where_no_converter_replaces_it(
        family, freeze, tmp_path, monkeypatch):
    path, args = family("detector_tflite_nms")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "android", "-o", f"{tmp_path}/")
    assert_failed(result, 3, "dummy_post_processing", "_implements='TFLite_Detection_PostProcess'",
                  "android cannot take it", "tflite")
    assert not list(tmp_path.iterdir())


def test_batched_nms_in_a_while_converts_to_onnx_and_server(family, freeze, tmp_path,
                                                             monkeypatch):
    path, args = family("detector_batched_nms")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "onnx,server", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    for name in ("saved_model.onnx.json", "saved_model.savedmodel.json"):
        car = json.loads((tmp_path / name).read_text())
        assert car["verification"]["passed"], (name, car["verification"])


def test_detector_edge_int8_without_calibration_images_is_one_line(family, freeze, tmp_path,
                                                                   monkeypatch):
    path, _ = family("detector_tflite_nms")  # its args give images: left out
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, "--target", "edge-int8", "-o", f"{tmp_path}/")
    assert_failed(result, 3, "non-max suppression", "--calibration")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["detector_nms_v5", "detector_tflite_nms"])
def test_detector_edge_int8_on_calibration_images_verifies_its_detections(
        family, freeze, tmp_path, monkeypatch, name):
    """Calibrated on images with objects, a detector's int8 model is verified on them (not on
    random inputs, where its boxes leave the calibrated range), each image's detections matched
    to the original's (NMS ranks near-tied scores either way) and judged per unit of range."""
    path, args = family(name)
    assert args[:2] == ["--verify-data", "images.npz"]  # what the coverage run gives
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, "--calibration", "images.npz", "--target", "edge-int8", "-o",
                    f"{tmp_path}/", "--save-golden", f"{tmp_path}/golden")
    assert result.exit_code == 0, result.output
    again = freeze("verify", f"{tmp_path}/saved_model.edge-int8.tflite", "--golden",
                   f"{tmp_path}/golden")
    assert again.exit_code == 0, again.output  # later, matched as the sidecar says
    car = json.loads((tmp_path / "saved_model.edge-int8.tflite.json").read_text())
    if name == "detector_tflite_nms":  # the op's shapes (the composite's stand-in's: scalars)
        shapes = {o["name"]: o["shape"] for o in car["outputs"]}
        assert shapes["detection_boxes:0"] == [None, 10, 4], shapes
        assert shapes["num_detections:0"] == [None], shapes
    check = car["verification"]
    assert check["passed"] and check["data"] == "images.npz (16 rows)", check
    assert "detection_boxes:0" in check["detections"]
    assert check["metrics"]["detection_boxes:0"]["mean_abs_diff"] < 1.0  # pixels of a 32x32 image
    assert check["metrics"]["detection_scores:0"]["mean_abs_diff"] < 0.01


def test_padded_nms_is_refused_by_openvino_in_one_line(family, freeze, tmp_path, monkeypatch):
    pytest.importorskip("openvino")
    path, args = family("detector_batched_nms")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, *args, "--target", "openvino", "-o", f"{tmp_path}/")
    assert_failed(result, 3, "non_max_suppression_padded_v2", "OpenVINO", "onnx")
