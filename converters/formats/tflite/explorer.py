"""A .tflite drawn by Model Explorer's `builtin_tflite_flatbuffer` adapter (the flatbuffer parsed,
nothing run). Its nodes carry their output tensors' names, so an overlay is keyed by tensor name
(`a;b;c` for an op TFLite fused from nodes a, b and c); quantized, each layer's rmse/scale
(`quant_debug`) is a second overlay."""

from __future__ import annotations

from graphfreeze.plugins import Explorer


def tensors(path: str) -> list[str]:
    """The names of the tensors the ops of a .tflite's first subgraph make, in op order."""
    from ai_edge_litert import schema_py_generated as schema
    from graphfreeze.io import storage

    graph = schema.Model.GetRootAs(storage.read_bytes(path), 0).Subgraphs(0)
    names = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        for k in range(op.OutputsLength()):
            index = op.Outputs(k)
            if index >= 0:
                names.append(graph.Tensors(index).Name().decode("utf-8", "replace"))
    return names


def keys(path: str, nodes: list[str]) -> dict[str, str]:
    """A tensor `a;b;c` stands for the last of a, b, c in graph order (as the TFLite runtime's
    `tensors` names it for the divergence locator)."""
    position = {name: i for i, name in enumerate(nodes)}
    found = {}
    for tensor in tensors(path):
        parts = [p for p in tensor.split(";") if p in position]
        if parts:
            found.setdefault(max(parts, key=position.get), tensor)
    return found


def layers(path: str, facts: dict) -> tuple[str, dict] | None:
    """The int8 error per quantized layer (the export's `quantization_layers` rows), keyed by the
    tensors the .tflite makes; None when it has none."""
    from graphfreeze.formats.tflite import quant_debug

    rows = facts.get("quantization_layers") or []
    if not rows:
        return None
    made = set(tensors(path))
    values = {k: v for k, v in quant_debug.overlay_values(rows).items() if k in made}
    return (f"int8 error per layer, rmse/scale ({quant_debug.ROUNDING:.2f} is rounding alone)",
            values) if values else None


EXPLORER = Explorer("builtin_tflite_flatbuffer", ".tflite files", keys,
                    lambda path: path.lower().endswith(".tflite"), layers)
