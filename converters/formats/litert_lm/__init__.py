"""Language models for on-device runtimes: a keras-hub CausalLM as one `.tflite` with `prefill_<T>`
and `decode` signatures and its KV cache as per-layer inputs and outputs (LiteRT-LM's
conventions), verified by the tokens it generates."""

from graphfreeze.formats.litert_lm.export import FORMAT, STAGE  # noqa: F401
