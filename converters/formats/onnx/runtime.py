"""An `.onnx` file run in onnxruntime, as `freeze verify` runs an onnx artifact: a model with
QuantizeLinear/DequantizeLinear runs them as ONNX defines them, as verification did."""

from __future__ import annotations


def file_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order."""

    def run(feeds: dict) -> list:
        import onnx
        from graphfreeze.formats.onnx.export import session_runner

        graph = onnx.load(path, load_external_data=False).graph
        qdq = any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in graph.node)
        return session_runner(path, inputs, outputs, as_defined=qdq)(feeds)

    return run
