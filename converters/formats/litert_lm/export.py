"""export_litert_lm: a keras-hub CausalLM (loaded from its `.keras` file) as one `.tflite` with
`prefill_<T>` and `decode` signatures and the KV cache as per-layer inputs and outputs, in the
weight type its target names; the sidecar records the cache layout an app allocates."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.errors import InputError
from graphfreeze.formats.litert_lm.runtime import open_litert_lm
from graphfreeze.formats.litert_lm.trace import CACHES, convert, signature_names
from graphfreeze.formats.litert_lm.weights import BLOCK_SIZES, WEIGHTS, quantized
from graphfreeze.io.trees import artifact_digest
from graphfreeze.lm.layout import CacheOptions, of_run, read
from graphfreeze.lm.step import infos
from graphfreeze.options import OptionValueError, option
from graphfreeze.plugins import Format, Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import TensorInfo


@dataclass(frozen=True)
class LiteRTLMOptions(CacheOptions):
    prefill_lengths: tuple[int, ...] = option(
        (128,), flag="--prefill-lengths", metavar="T",
        help="litert-lm: a prefill_<T> signature for each length (repeatable; default 128).")
    weights: str = option("float32", help="litert-lm: float32, fp16, int8 or int4 weights.")
    block_size: int = option(32, flag="--block-size", metavar="N",
                             help="litert-lm-int4: weights quantized in blocks of 32 or 128.",
                             applies=lambda o: o.weights == "int4")

    def __post_init__(self):
        if self.weights not in WEIGHTS:
            raise OptionValueError("weights", self.weights, f"choose {', '.join(WEIGHTS)}")
        if self.block_size not in BLOCK_SIZES:
            raise OptionValueError("block_size", self.block_size, "choose 32 or 128")
        if not self.prefill_lengths or min(self.prefill_lengths) < 1:
            raise OptionValueError("prefill_lengths", list(self.prefill_lengths),
                                   "give one or more lengths of at least 1")
        short = [t for t in self.prefill_lengths if self.max_cache_len and t > self.max_cache_len]
        if short:
            raise OptionValueError("max_cache_len", self.max_cache_len,
                                   f"is shorter than the prefill length {short[0]}; give at "
                                   f"least {max(self.prefill_lengths)}")


def run(state, options: LiteRTLMOptions):
    where = state.model.location
    model = of_run(state)
    layout = read(model, options.max_cache_len, where)
    lengths = sorted(set(options.prefill_lengths))
    if lengths[-1] > layout.cache_len:
        raise InputError(f"{where}: prefill length {lengths[-1]} is longer than the cache "
                         f"({layout.cache_len}); give --prefill-lengths of at most that")
    data = quantized(convert(model, layout, lengths, options.weights == "fp16", where),
                     options.weights, options.block_size, where)
    (local,) = state.files.workdir([state.output_path])
    with open(local, "wb") as f:
        f.write(data)
    sha256, size = artifact_digest([local])
    signatures = signature_names(lengths)
    facts = {"weights": options.weights, "signatures": signatures, "layout": layout.as_json(),
             "prompt_lengths": lengths,
             **({"block_size": options.block_size} if options.weights == "int4" else {})}
    summary = (f"signatures {', '.join(signatures)}: tokens [1, T] int32, input_pos [T] int32, "
               f"kv_cache_k_<i>/kv_cache_v_<i> {layout.cache_shape()} {layout.dtype} for "
               f"{layout.layers} layers in and out, logits out",)
    inputs, outputs = infos(layout, CACHES, (TensorInfo("tokens", "int32", (1, None)),
                                             TensorInfo("input_pos", "int32", (None,))))
    artifact = Artifact(path=state.output_path, sha256=sha256, size=size, format=FORMAT,
                        inputs=inputs, outputs=outputs, staged=local, facts=facts, summary=summary)
    return dataclasses.replace(state, artifact=artifact)


STAGE = Stage("export_litert_lm", run, "model", "artifact", LiteRTLMOptions,
              "LiteRT-LM .tflite: prefill_<T> and decode signatures, the KV cache per layer",
              suffix=".tflite")


FORMAT = Format("litert_lm", STAGE, open=open_litert_lm, requires=("ai_edge_litert", "keras_hub",
                "ai_edge_quantizer"), extra="llm")
