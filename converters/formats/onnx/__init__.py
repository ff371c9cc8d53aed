"""ONNX models made by tf2onnx, run in onnxruntime."""

from graphfreeze.formats.onnx.export import STAGE, session_runner
from graphfreeze.formats.onnx.gaps import onnx_gaps
from graphfreeze.formats.onnx.probe import onnx_probe
from graphfreeze.plugins import Format

FORMAT = Format("onnx", STAGE, runtime=session_runner, probe=onnx_probe, gaps=onnx_gaps,
                requires=("tf2onnx", "onnx", "onnxruntime"), extra="convert")
