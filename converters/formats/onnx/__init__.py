"""ONNX models made by tf2onnx, run in onnxruntime."""

from graphfreeze.formats.onnx.export import STAGE
from graphfreeze.formats.onnx.gaps import onnx_gaps
from graphfreeze.formats.onnx.probe import onnx_probe
from graphfreeze.formats.onnx.runtime import file_runner
from graphfreeze.plugins import Format

FORMAT = Format("onnx", STAGE, runtime=file_runner, probe=onnx_probe, gaps=onnx_gaps,
                requires=("tf2onnx", "onnx", "onnxruntime"), extra="convert")
