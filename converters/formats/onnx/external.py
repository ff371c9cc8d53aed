"""A model's weights kept out of tf2onnx and written as ONNX external data (issue 46).

tf2onnx copies each weight into its TensorFlow graph, a numpy array, an ONNX tensor and the
model (3-4 times the weights), and its TensorFlow graph is one protobuf (2 GiB). Past
`OnnxOptions.apart_bytes` of weights held apart (graph/weights.py), each is given to tf2onnx as
a Placeholder of its dtype and shape (`stand_ins`), made an initializer again in the ONNX model
with its data external (`as_initializers`), and written into FILE.onnx.data from the held array
itself (`export.write`): the weights are never copied. onnxruntime folds what tf2onnx would have
folded into them (a convolution kernel's transpose) when it loads the model.
"""

from __future__ import annotations

import numpy as np
from graphfreeze.graph.weights import is_held


def held_bytes(weights) -> int:
    return sum(a.nbytes for a in weights.arrays.values()) if weights is not None else 0


def stand_ins(graph_def, weights) -> tuple:
    """(a copy of `graph_def` with each held weight a Placeholder, {'W:0': its array})."""
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    arrays = {}
    for node in graph_def.node:
        new = out.node.add()
        if not is_held(node):
            new.CopyFrom(node)
            continue
        arrays[f"{node.name}:0"] = weights.value(node)
        new.name, new.op = node.name, "Placeholder"
        new.input.extend(node.input)  # (control inputs, if any)
        new.attr["dtype"].type = node.attr["value"].tensor.dtype
        new.attr["shape"].shape.CopyFrom(node.attr["value"].tensor.tensor_shape)
    return out, arrays


def as_initializers(model, arrays: dict[str, np.ndarray]) -> None:
    """Each stand-in graph input of `model` made an initializer of its array's dtype and shape,
    marked external (its data is written by `export.write`), and no longer a graph input."""
    from onnx import TensorProto, helper

    graph = model.graph
    present = {v.name for v in graph.input} & set(arrays)
    kept = [v for v in graph.input if v.name not in present]
    del graph.input[:]
    graph.input.extend(kept)
    for name in sorted(present):
        array = arrays[name]
        tensor = graph.initializer.add(name=name, dims=array.shape,
                                       data_type=helper.np_dtype_to_tensor_dtype(array.dtype))
        tensor.data_location = TensorProto.EXTERNAL
    graph.initializer.sort(key=lambda t: t.name)
