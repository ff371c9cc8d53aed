"""A model's weights kept out of tf2onnx and written as ONNX external data (issue 46).

tf2onnx copies each weight into its TensorFlow graph, a numpy array, an ONNX tensor and the
model (3-4 times the weights), and its TensorFlow graph is one protobuf (2 GiB). Past
`OnnxOptions.apart_bytes` of weights held apart (graph/weights.py), each is given to tf2onnx as
a Placeholder of its dtype and shape (graph/stand_ins.py), made an initializer again in the
ONNX model with its data external (`as_initializers`), and written into FILE.onnx.data from the
held array itself (`export.write`): the weights are never copied. onnxruntime folds what tf2onnx would have
folded into them (a convolution kernel's transpose) when it loads the model.
"""

from __future__ import annotations

import numpy as np


def as_initializers(model, arrays: dict[str, np.ndarray]) -> None:
    """Each stand-in graph input of `model` ({'W:0': array}) made an initializer of its array's
    dtype and shape, marked external (its data is written by `export.write`), and no longer a
    graph input."""
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
