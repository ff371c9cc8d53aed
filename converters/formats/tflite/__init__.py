"""TFLite flatbuffers (float, fp16, dynamic-range and int8), run in LiteRT."""

from graphfreeze.formats.tflite.export import FORMAT, STAGE  # noqa: F401
