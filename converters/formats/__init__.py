"""Built-in artifact formats, one folder each: `export.py` (the stage), `runtime`, `probe`,
`gaps`, and a `FORMAT` record in the folder's `__init__.py` naming them."""

from __future__ import annotations

from graphfreeze.plugins import Format


def builtin_formats() -> list[Format]:
    from graphfreeze.formats import frozen_pb, onnx, openvino, saved_model, tflite

    return [frozen_pb.FORMAT, saved_model.FORMAT, tflite.FORMAT, onnx.FORMAT, openvino.FORMAT]
