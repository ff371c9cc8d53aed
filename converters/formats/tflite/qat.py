"""Quantization-aware-trained graphs (FakeQuant ops, as tfmot's `quantize_model` leaves them) to
TFLite the way TensorFlow converts them: `TFLiteConverter` (v2) on a concrete function holding
the frozen graph, `optimizations=[DEFAULT]` and no representative dataset, so the converter
takes every range from the FakeQuant ops the model learned. Layers a partly annotated model
(`quantize_annotate_layer` on some layers) leaves without FakeQuant stay float, as TFLiteConverter
keeps them: calibrating them on synthetic data would quantize what the user did not ask for.
The v1 graph converter would keep them as float Quantize/Dequantize pairs; a calibrator would
overwrite them (and fail on MaxPool's same-scale constraint).
"""

from __future__ import annotations

from graphfreeze.graph.fake_quant import FAKE_QUANT_OPS


def is_qat(graph_def) -> bool:
    """Whether the graph (or a function it holds) has training-time quantization ops: the
    test TensorFlow's converter applies (`is_quantization_aware_trained_model`)."""
    return any(n.op in FAKE_QUANT_OPS for n in graph_def.node) or any(
        n.op in FAKE_QUANT_OPS for f in graph_def.library.function for n in f.node_def)


def qat_converter(graph_def, input_shapes, output_names: list[str], int8_io: bool):
    """TFLiteConverter for a QAT graph: `input_shapes` [(tensor name, dtype, shape)], outputs by
    tensor name; int8 inputs and outputs when `int8_io` (edge-int8), float otherwise."""
    import tensorflow as tf

    def imported(*args):
        return tf.compat.v1.import_graph_def(
            graph_def, input_map={name: arg for (name, _, _), arg in
                                  zip(input_shapes, args, strict=True)},
            return_elements=output_names, name="")

    specs = [tf.TensorSpec(shape, tf.as_dtype(dtype), name=name.rsplit(":", 1)[0])
             for name, dtype, shape in input_shapes]
    function = tf.compat.v1.wrap_function(imported, specs)
    conv = tf.lite.TFLiteConverter.from_concrete_functions([function], function)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if int8_io:
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    return conv


def float_ops(data: bytes) -> list[str]:
    """Ops of a converted model that still compute in float (an output tensor float32/16):
    layers the QAT model left unquantized (no FakeQuant around them)."""
    import numpy as np
    from graphfreeze.formats.tflite.interpreter import interpreter

    interp = interpreter(model_content=data)
    tensors = {d["index"]: d for d in interp.get_tensor_details()}
    found = []
    for op in interp._get_ops_details():  # noqa: SLF001 -- the only op list LiteRT exposes
        if op["op_name"] in ("QUANTIZE", "DEQUANTIZE"):
            continue
        outs = [tensors[int(i)] for i in op["outputs"] if int(i) in tensors]
        if any(t["dtype"] in (np.float32, np.float16) for t in outs):
            found.append(f"{op['op_name']} ({outs[0]['name'].split(';')[-1]})")
    return found


def kept_float(target: str, ops: list[str]) -> str:
    """The warning for a partly QAT model's float ops (`float_ops`)."""
    return (f"{target}: {len(ops)} op(s) the QAT model does not annotate ({', '.join(ops[:2])}) "
            "stay float, as TFLiteConverter keeps them; annotate them (tfmot "
            "quantize_annotate_layer) for a full-integer model")
