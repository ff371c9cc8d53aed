"""Which interpreter tensor a graph name stands for: by name (the node's, or its tensor's `x:0`
as the converter names a ragged input's components, listed in any order), else by position."""

from __future__ import annotations

from graphfreeze.formats.tflite.interpreter import by_name


def test_tensors_match_by_node_or_tensor_name_and_else_by_position():
    listed = [{"name": "given_1:0", "index": 0}, {"name": "given:0", "index": 1}]
    assert {n: d["index"] for n, d in by_name(listed, ["given", "given_1"]).items()
            if n in ("given", "given_1")} == {"given": 1, "given_1": 0}
    renamed = [{"name": "serving_default_x:0", "index": 3}, {"name": "serving_default_y:0",
                                                              "index": 4}]
    assert {n: d["index"] for n, d in by_name(renamed, ["x", "y"]).items()} == {"x": 3, "y": 4}
