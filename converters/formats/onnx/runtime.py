"""An `.onnx` file run in onnxruntime, as `freeze verify` runs an onnx artifact: a model with
QuantizeLinear/DequantizeLinear runs them as ONNX defines them, as verification did; anything
wrong with the file is one InputError naming it."""

from __future__ import annotations


def file_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order."""

    def run(feeds: dict) -> list:
        import onnx
        from graphfreeze.errors import InputError, first_line
        from graphfreeze.formats.onnx.export import has_qdq, session_runner

        try:
            qdq = has_qdq(onnx.load(path, load_external_data=False))
            return session_runner(path, inputs, outputs, as_defined=qdq)(feeds)
        except Exception as err:  # noqa: BLE001 -- onnx's and onnxruntime's errors for a file
            raise InputError(f"{path}: not an ONNX model onnxruntime runs on the golden inputs "
                             f"({first_line(err)})") from err

    return run
