"""export_onnx_lm: a keras-hub CausalLM (from its `.keras` file) as one `.onnx` whose one graph
takes any number of tokens (the prompt, then one at a time): `input_ids` and `position_ids`
[1, S] int64, `past_key_values.<i>.key/value` [1, kv heads, cache length, head size] in, and
`logits` and `present.<i>.key/value` out, converted by tf2onnx from the model's own cached
forward pass (lm/step.py); the sidecar records the cache layout."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.errors import InputError, first_line
from graphfreeze.formats.onnx_lm.runtime import open_onnx_lm
from graphfreeze.io.trees import artifact_digest
from graphfreeze.lm.layout import CacheOptions, of_run, read
from graphfreeze.lm.step import Caches, infos, step
from graphfreeze.plugins import Format, Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import TensorInfo

OPSET = 17
CACHES = Caches("past_key_values.{i}.key", "past_key_values.{i}.value", "present.{i}.key",
                "present.{i}.value", axes=(0, 2, 1, 3))
LEADING = (TensorInfo("input_ids", "int64", (1, None)), TensorInfo("position_ids", "int64",
                                                                    (1, None)))


@dataclass(frozen=True)
class OnnxLMOptions(CacheOptions):
    pass


def convert(model, layout, where: str):
    """The ModelProto of the cached step, its weights frozen in by tf2onnx."""
    import tensorflow as tf
    import tf2onnx
    from graphfreeze.formats.onnx_lm.dynamic_update_slice import register

    register()
    run = step(model, layout, CACHES)
    specs = [tf.TensorSpec([1, None], tf.int64, name=i.name) for i in LEADING] + \
        [tf.TensorSpec(CACHES.shape(layout), layout.dtype, name=n)
         for n in CACHES.inputs(layout.layers)]

    def at(input_ids, position_ids, *caches):
        return run(input_ids, position_ids[0, 0], *caches)

    try:
        proto, _ = tf2onnx.convert.from_function(tf.function(at, input_signature=specs),
                                                 input_signature=specs, opset=OPSET)
    except Exception as err:  # tf2onnx's own message names the op
        raise InputError(f"{where}: tf2onnx cannot convert the model's cached forward pass "
                         f"({first_line(err)})") from err
    return proto


def run(state, options: OnnxLMOptions):
    where = state.model.location
    model = of_run(state)
    layout = read(model, options.max_cache_len, where)
    proto = convert(model, layout, where)
    (local,) = state.files.workdir([state.output_path])
    with open(local, "wb") as f:
        f.write(proto.SerializeToString())
    sha256, size = artifact_digest([local])
    inputs, outputs = infos(layout, CACHES, LEADING)
    summary = (f"input_ids, position_ids [1, S] int64, past_key_values.<i>.key/value "
               f"{CACHES.shape(layout)} {layout.dtype} for {layout.layers} layers in, logits and "
               "present.<i>.key/value out (one buffer of the cache's length)",)
    artifact = Artifact(path=state.output_path, sha256=sha256, size=size, format=FORMAT,
                        inputs=inputs, outputs=outputs, staged=local,
                        facts={"layout": layout.as_json(), "opset": OPSET}, summary=summary)
    return dataclasses.replace(state, artifact=artifact)


STAGE = Stage("export_onnx_lm", run, "model", "artifact", OnnxLMOptions,
              "ONNX language model: past_key_values in, present out (onnxruntime-genai's names)",
              suffix=".onnx")
FORMAT = Format("onnx_lm", STAGE, open=open_onnx_lm, requires=(
    "tf2onnx", "onnx", "onnxruntime", "keras_hub"), extra="llm")
