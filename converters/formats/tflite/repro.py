"""`freeze reduce`'s repro script, the TFLite part: TFLiteConverter on the reduced `.pb` with
the target's settings (quantization, TF ops), and the converted model run in TensorFlow's
interpreter for a divergence (reduce/stock.py writes the rest)."""

from __future__ import annotations

TFLITE = '''
converter = tf.compat.v1.lite.TFLiteConverter.from_frozen_graph(
    PB, list(INPUTS), OUTPUTS,
    input_shapes={{k: [1 if d is None else d for d in v] for k, v in INPUTS.items()}})
{quantize}try:
    model = converter.convert()
except Exception as err:  # ConverterError
    failed(err)
'''

TFLITE_RUN = '''

def converted(feeds):
    interpreter = tf.lite.Interpreter(model_content=model)
    for detail in interpreter.get_input_details():
        interpreter.resize_tensor_input(detail["index"], feeds[detail["name"]].shape)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        value, (scale, zero) = feeds[detail["name"]], detail["quantization"]
        if scale:
            value = np.round(value / scale + zero)
        interpreter.set_tensor(detail["index"], value.astype(detail["dtype"]))
    interpreter.invoke()
    got = {{}}
    for detail in interpreter.get_output_details():
        value, (scale, zero) = interpreter.get_tensor(detail["index"]), detail["quantization"]
        got[detail["name"]] = (value.astype(np.float32) - zero) * scale if scale else value
    return [got[name] for name in OUTPUTS]
'''


def _quantize(options, npz: bool) -> str:
    """The TFLiteConverter settings of the target's export options."""
    quantize = getattr(options, "quantize", "none")
    lines = []
    if quantize in ("fp16", "dynamic", "int8", "int16x8"):
        lines.append("converter.optimizations = [tf.lite.Optimize.DEFAULT]")
    if quantize == "fp16":
        lines.append("converter.target_spec.supported_types = [tf.float16]")
    if quantize in ("int8", "int16x8"):
        sample = ("[[FEEDS[k][i:i + 1] for k in INPUTS] for i in range(len(next(iter("
                  "FEEDS.values()))))]" if npz else
                  "[[np.random.default_rng(i).standard_normal([1 if d is None else d for d in "
                  "v]).astype(np.float32) for v in INPUTS.values()] for i in range(20)]")
        lines.append(f"converter.representative_dataset = lambda: iter({sample})")
        ops = "EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8" \
            if quantize == "int16x8" else "TFLITE_BUILTINS_INT8"
        lines.append(f"converter.target_spec.supported_ops = [tf.lite.OpsSet.{ops}]")
        io = getattr(options, "io_type", "int8")
        if io != "float":
            kind = "tf.int16" if quantize == "int16x8" else \
                "tf.uint8" if io == "uint8" else "tf.int8"
            lines.append(f"converter.inference_input_type = {kind}")
            lines.append(f"converter.inference_output_type = {kind}")
    if getattr(options, "allow_tf_ops", False):
        lines.append("converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, "
                     "tf.lite.OpsSet.SELECT_TF_OPS]")
    return "".join(line + "\n" for line in lines)


def script(options, pb: str, inputs, outputs, compare: bool) -> str:
    """The conversion (and, to compare, `converted(feeds)`) as the stock converter does it."""
    text = TFLITE.format(quantize=_quantize(options, compare))
    return text + TFLITE_RUN.format() if compare else text
