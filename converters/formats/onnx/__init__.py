"""ONNX models made by tf2onnx, run in onnxruntime."""

from graphfreeze.formats.onnx.export import FORMAT, STAGE  # noqa: F401
