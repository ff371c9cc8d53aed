"""Weights held apart (graph/weights.py) handed to a converter as Placeholders of their dtype and
shape, so the converter never copies them and its TensorFlow graph stays a small protobuf; the
export makes them constants again in its own format, written from the arrays themselves
(formats/onnx/external.py, formats/tflite/buffer_offset.py): a model over 2 GiB in about its
weights' memory."""

from __future__ import annotations

import dataclasses

from graphfreeze.errors import ConfigError
from graphfreeze.graph.weights import attach, is_held


def held_bytes(weights) -> int:
    """The bytes of the weights held apart (0: none)."""
    return sum(a.nbytes for a in weights.arrays.values()) if weights is not None else 0


def kept_apart(state, apart_bytes: int, quantizes: bool, instead: str) -> tuple:
    """(state, whether its held weights stay apart from the converter: over `apart_bytes`).
    Kept with the converter, they are put back into the graph (the state returned holds none);
    a target that quantizes is refused them apart, pointed to `instead`."""
    held = held_bytes(state.weights)
    if held > apart_bytes:
        if quantizes:  # (the converter, or the runtime's tools, quantize what they hold)
            raise ConfigError(f"{state.model.graph_file}: the weights are {held / 2**30:.2f} "
                              f"GiB, over the {apart_bytes / 2**30:.3g} GiB {state.target} "
                              f"quantizes; use {instead}")
        return state, True
    if state.weights is not None:
        attach(state.graph_def, state.weights)
        state = dataclasses.replace(state, weights=None)
    return state, False


def stand_ins(graph_def, weights) -> tuple:
    """(a copy of `graph_def` with each held weight a Placeholder, {node name: its array})."""
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    arrays = {}
    for node in graph_def.node:
        new = out.node.add()
        if not is_held(node):
            new.CopyFrom(node)
            continue
        arrays[node.name] = weights.value(node)
        new.name, new.op = node.name, "Placeholder"
        new.input.extend(node.input)  # (control inputs, if any)
        new.attr["dtype"].type = node.attr["value"].tensor.dtype
        new.attr["shape"].shape.CopyFrom(node.attr["value"].tensor.tensor_shape)
    return out, arrays
