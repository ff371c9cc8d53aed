"""A causal language model's KV cache layout, read from the keras-hub model itself: what an app
allocates for each layer's key and value ([1, cache length, kv heads, head size], in the axes
its format's convention orders them)."""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass

from graphfreeze.errors import InputError
from graphfreeze.options import option

# keras-hub's cached forward pass: call_with_cache(token_ids, cache, cache_update_index)
CACHE_CALL = ("token_ids", "cache", "cache_update_index")


@dataclass(frozen=True)
class CacheOptions:
    """The KV cache's length, which every generative target's export takes."""

    max_cache_len: int | None = option(
        None, flag="--max-cache-len", metavar="N",
        help="litert-lm, onnx-lm: KV cache length (default: the model's longest sequence).")


@dataclass(frozen=True)
class Layout:
    layers: int
    kv_heads: int
    head_size: int
    cache_len: int
    dtype: str
    vocab_size: int
    special_tokens: dict

    def cache_shape(self) -> list[int]:
        return [1, self.cache_len, self.kv_heads, self.head_size]

    def as_json(self) -> dict:
        return {**asdict(self), "cache_shape": self.cache_shape()}


def causal_lm(model, where: str):
    """`model` if it is a keras-hub causal LM with the cached forward pass this export traces;
    else one line saying which targets it can take."""
    call = getattr(model, "call_with_cache", None)
    if model is None or call is None or not hasattr(model, "backbone"):
        raise InputError(f"{where}: not a causal language model (a keras-hub CausalLM with "
                         "call_with_cache); the litert-lm and onnx-lm targets take only those: "
                         "convert it with --target tflite, onnx or another of `freeze targets`")
    params = tuple(inspect.signature(call).parameters)[:3]
    if params != CACHE_CALL:
        import keras_hub

        raise InputError(f"{where}: {type(model).__name__}.call_with_cache takes "
                         f"({', '.join(params)}), not ({', '.join(CACHE_CALL)}) as keras-hub "
                         f"{keras_hub.__version__} here does; load it with the keras-hub "
                         "version that saved it, or re-save it with this one")
    return model


def read(model, cache_len: int | None, where: str) -> Layout:
    """The layout of `model`'s cache: one cached step on one token shows its shape
    [batch, layers, 2, length, kv heads, head size] (each architecture sizes its heads its
    own way), at `cache_len` or the model's longest sequence."""
    from keras import backend, ops

    backbone = model.backbone
    longest = getattr(backbone, "max_sequence_length", None)
    cache_len = cache_len or longest or 1024
    if longest and cache_len > longest:
        raise InputError(f"{where}: --max-cache-len {cache_len} is longer than the "
                         f"{longest} positions the model has; give at most {longest}")
    _, cache = model._build_cache(ops.zeros((1, 1), dtype="int32"))
    shape = tuple(int(d) for d in cache.shape)
    tokenizer = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    special = {k: int(v) for k in ("start_token_id", "end_token_id", "pad_token_id")
               if isinstance(v := getattr(tokenizer, k, None), int)}
    return Layout(layers=shape[1], kv_heads=shape[4], head_size=shape[5], cache_len=cache_len,
                  dtype=backend.standardize_dtype(cache.dtype),
                  vocab_size=int(backbone.vocabulary_size), special_tokens=special)


def of_run(state):
    """The loaded keras-hub CausalLM, or one line saying what these targets take."""
    where = state.model.location
    if state.model.kind != "keras":
        raise InputError(f"{where}: the {state.target} target takes a keras-hub CausalLM's "
                         f".keras file (its cached forward pass); a {state.model.kind} model has "
                         "none to trace: give the .keras file, or convert this with --target "
                         "tflite")
    return causal_lm(getattr(state.model, "keras_model", None), where)
