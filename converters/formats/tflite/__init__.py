"""TFLite flatbuffers (float, fp16, dynamic-range and int8), run in LiteRT."""

from graphfreeze.formats.tflite.export import STAGE
from graphfreeze.formats.tflite.gaps import tflite_gaps
from graphfreeze.formats.tflite.probe import tflite_probe
from graphfreeze.formats.tflite.runner import file_runner
from graphfreeze.plugins import Format

FORMAT = Format("tflite", STAGE, runtime=file_runner, probe=tflite_probe, gaps=tflite_gaps,
                requires=("ai_edge_litert",), extra="convert")
