"""The web: an ONNX model for onnxruntime-web and a .tflite for LiteRT.js, each verified in a
headless Chromium running the npm runtime's wasm backend."""

from graphfreeze.formats.web.export import FORMAT, STAGE  # noqa: F401
