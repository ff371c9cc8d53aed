"""What `freeze inspect` reports of an .onnx file, read by onnx itself: its graph inputs and
outputs (element type, shape; a named dimension is dynamic) and its nodes' op types."""

from __future__ import annotations

from collections import Counter

from graphfreeze.io import storage


def describe(path: str) -> dict | None:
    """{inputs, outputs, op_counts, opset} of the ONNX model at `path` (its external data not
    read); None when the file is not an .onnx one."""
    if storage.isdir(path) or not path.lower().endswith(".onnx"):
        return None
    import onnx

    model = onnx.load_model_from_string(storage.read_bytes(path), load_external_data=False) \
        if storage.is_remote(path) else onnx.load(path, load_external_data=False)
    graph = model.graph
    weights = {t.name for t in graph.initializer}

    def tensor(value) -> dict:
        typed = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in typed.shape.dim]
        return {"name": value.name, "dtype": dtype(typed.elem_type),
                "shape": dims if typed.HasField("shape") else None}

    def dtype(code: int) -> str:
        """numpy's name of an ONNX element type; an unknown one (a newer onnx's) by its code."""
        try:
            return onnx.helper.tensor_dtype_to_np_dtype(code).name if code else "?"
        except (KeyError, ValueError, TypeError):
            return f"elem_type {code}"

    return {"inputs": [tensor(v) for v in graph.input if v.name not in weights],
            "outputs": [tensor(v) for v in graph.output],
            "op_counts": dict(Counter(n.op_type for n in graph.node)),
            "opset": {o.domain or "ai.onnx": o.version for o in model.opset_import}}
