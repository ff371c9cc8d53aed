"""Custom objects named `package>Name` in a Keras config, read without Keras."""

from __future__ import annotations

from graphfreeze.sources.keras_objects import missing_message, references, with_full_names

KERAS3 = {"class_name": "Functional", "config": {"layers": [
    {"module": "keras.layers", "class_name": "Conv2D", "registered_name": None,
     "config": {"activation": {"module": "builtins", "class_name": "function",
                               "config": "kecam>hard_swish", "registered_name": "function"}}},
    {"module": None, "class_name": "Scale", "registered_name": "kecam>Scale", "config": {}}]}}
H5 = {"class_name": "Functional", "config": {"layers": [
    {"class_name": "Conv2D", "config": {"activation": "kecam>hard_swish"}},
    {"class_name": "kecam/yolov8>Scale", "config": {"name": "scale"}}]}}


def test_references_in_keras3_and_legacy_configs():
    assert references(KERAS3) == ["kecam>hard_swish", "kecam>Scale"]
    assert references(H5) == ["kecam>hard_swish", "kecam/yolov8>Scale"]


def test_objects_answer_to_their_full_names():
    scale = object()
    objects = with_full_names({"Scale": scale}, H5)
    assert objects["kecam/yolov8>Scale"] is scale and "kecam>hard_swish" not in objects


def test_the_message_names_the_object_not_the_package():
    line = missing_message("m.keras", "kecam>hard_swish")
    assert "'hard_swish'" in line and "package 'kecam'" in line
    assert "--custom-objects MODULE:hard_swish" in line
