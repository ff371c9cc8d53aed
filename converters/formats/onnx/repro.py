"""`freeze reduce`'s repro script, the ONNX part: tf2onnx on the reduced `.pb` at the target's
opset, run in onnxruntime (reduce/stock.py writes the rest)."""

from __future__ import annotations

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


def script(options, pb: str, inputs, outputs, compare: bool) -> str:
    """The conversion and `converted(feeds)`, as `python -m tf2onnx.convert` does it."""
    from graphfreeze.formats.onnx.gaps import newest_opset

    opset = getattr(options, "opset", None) or newest_opset()
    return ONNX.format(pb=pb, stem=pb[:-3], opset=opset,
                       tensor_inputs=",".join(f"{n}:0" for n, _ in inputs),
                       tensor_outputs=",".join(f"{n}:0" for n in outputs))
