"""Shapes of an ONNX model's graph inputs and outputs that tf2onnx leaves out."""

from __future__ import annotations


def fill_io_shapes(model, infos) -> None:
    """Give each graph input and output tf2onnx left without a shape (a lookup table's
    embedding, a ragged row's mean) the shape ONNX's shape inference finds for it, else the one
    TensorFlow infers where its rank is known: onnx.checker rejects a graph output without one."""
    bare = [v for v in (*model.graph.input, *model.graph.output)
            if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
    if not bare:
        return
    import onnx

    light = type(model)(ir_version=model.ir_version)  # the weights' shapes, not their bytes
    light.opset_import.extend(model.opset_import)
    for field in ("node", "input", "output", "value_info"):
        getattr(light.graph, field).extend(getattr(model.graph, field))
    for tensor in model.graph.initializer:
        if tensor.ByteSize() <= 4096:  # values a Reshape or Slice may read
            light.graph.initializer.append(tensor)
        else:
            light.graph.initializer.add(name=tensor.name, dims=tensor.dims,
                                        data_type=tensor.data_type)
    try:
        inferred = onnx.shape_inference.infer_shapes(light).graph
        found = {v.name: v.type.tensor_type.shape for v in (*inferred.input, *inferred.output)
                 if v.type.tensor_type.HasField("shape")}
    except Exception:  # noqa: BLE001 -- ONNX's inference failing leaves TensorFlow's shapes
        found = {}
    del light
    known = {t.name: t.shape for t in infos if t.shape is not None}
    for value in bare:
        shape = value.type.tensor_type.shape
        if value.name in found:
            shape.CopyFrom(found[value.name])
        elif value.name in known:
            shape.SetInParent()
            for d in known[value.name]:
                dim = shape.dim.add()
                if d is not None:
                    dim.dim_value = d
