"""The repro script: the stock converter on the reduced `.pb`, as a user would call it, with
the target's settings (TFLite quantization, the ONNX opset); for a divergence, the converted
model run on the `.npz` against TensorFlow, exit 1 beyond the tolerance. Its last line starts
with `REPRO:` and says what happened."""

from __future__ import annotations

HEAD = '''"""Reproduces, with the stock converter: {failure}
(reduced by `freeze reduce --target {target}`: {nodes})
Run: python {name}"""
import os
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
PB = os.path.join(HERE, {pb!r})
INPUTS = {inputs!r}  # name -> shape (None: any size)
OUTPUTS = {outputs!r}
NPZ = {npz!r}
FEEDS = dict(np.load(os.path.join(HERE, NPZ))) if NPZ else None
graph_def = tf.compat.v1.GraphDef.FromString(open(PB, "rb").read())


def failed(err):
    print(f"REPRO: {{type(err).__name__}}: {{' '.join(str(err).split())[:3000]}}")
    sys.exit(2)
'''

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

ONNX = '''
os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # onnxruntime's usage events (1DS uploader) off
import onnxruntime
import tf2onnx

# the same as: python -m tf2onnx.convert --graphdef {pb} --inputs {tensor_inputs} \\
#     --outputs {tensor_outputs} --opset {opset} --output {stem}.onnx
try:
    proto, _ = tf2onnx.convert.from_graph_def(
        graph_def, input_names=[k + ":0" for k in INPUTS], output_names=[k + ":0" for k in OUTPUTS],
        opset={opset})
    session = onnxruntime.InferenceSession(proto.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
except Exception as err:  # tf2onnx's own errors, or the model it wrote that does not load
    failed(err)


def converted(feeds):
    return session.run([k + ":0" for k in OUTPUTS], {{k + ":0": v for k, v in feeds.items()}})
'''

OPENVINO = '''
sys.modules.setdefault("openvino_telemetry", None)  # OpenVINO's usage events off: its own stub
import openvino as ov

try:
    model = ov.convert_model(PB, input=[(k + ":0", ov.PartialShape(
        [-1 if d is None else d for d in v])) for k, v in INPUTS.items()],
        output=[k + ":0" for k in OUTPUTS])
    compiled = ov.Core().compile_model(model, "CPU", {{"INFERENCE_PRECISION_HINT": "f32"}})
except Exception as err:  # OpConversionFailure
    failed(err)


def converted(feeds):
    result = compiled({{k + ":0": v for k, v in feeds.items()}})
    return [result[compiled.output(k + ":0")] for k in OUTPUTS]
'''

COMPARE = '''
want = tf.compat.v1.Session(graph=tf.Graph()).__enter__()
tf.graph_util.import_graph_def(graph_def, name="")
want = want.run([k + ":0" for k in OUTPUTS], {{k + ":0": v for k, v in FEEDS.items()}})
rows = len(next(iter(FEEDS.values())))
got = [np.concatenate(parts) for parts in zip(*[converted({{k: v[i:i + 1] for k, v in FEEDS.items()}})
                                                for i in range(rows)], strict=True)]
worst = max(float(np.abs(w.astype(np.float64) - g).max()) for w, g in zip(want, got))
mean = max(float(np.abs(w.astype(np.float64) - g).mean()) for w, g in zip(want, got))
if (ATOL is not None and worst > ATOL) or (MEAN is not None and mean > MEAN):
    print(f"REPRO: diverges at {{', '.join(OUTPUTS)}}: max |diff| {{worst:.3g}}, "
          f"mean |diff| {{mean:.3g}} (tolerance {{ATOL}}, mean {{MEAN}})")
    sys.exit(1)
print(f"REPRO: agrees (max |diff| {{worst:.3g}}, mean |diff| {{mean:.3g}})")
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


def script(fmt: str, options, pb: str, npz: str | None, inputs, outputs, failure: str,
           target: str, atol, mean) -> str:
    """The repro script's text for format `fmt` (tflite, onnx, openvino)."""
    name = pb[:-3] + ".py"
    text = HEAD.format(failure=failure.replace('"""', "'''"), target=target, name=name, pb=pb,
                       inputs=dict(inputs), outputs=outputs, npz=npz,
                       nodes="a frozen graph of " + ", ".join(outputs))
    if fmt == "tflite":
        text += TFLITE.format(quantize=_quantize(options, bool(npz)))
        if npz:
            text += TFLITE_RUN.format()
    elif fmt == "onnx":
        from graphfreeze.formats.onnx.gaps import newest_opset

        opset = getattr(options, "opset", None) or newest_opset()
        text += ONNX.format(pb=pb, stem=pb[:-3], opset=opset,
                            tensor_inputs=",".join(f"{n}:0" for n, _ in inputs),
                            tensor_outputs=",".join(f"{n}:0" for n in outputs))
    elif fmt == "openvino":
        text += OPENVINO.format()
    if npz and fmt in ("tflite", "onnx", "openvino"):
        text += f"\nATOL, MEAN = {atol!r}, {mean!r}\n" + COMPARE.format()
    else:
        text += '\nprint("REPRO: converts")\n'
    return text
