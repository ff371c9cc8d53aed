"""Language models for onnxruntime: a keras-hub CausalLM as one `.onnx` taking `input_ids`,
`position_ids` and `past_key_values.<i>.key/value` and giving `logits` and
`present.<i>.key/value` (onnxruntime-genai's and Optimum's names; past and present one buffer of
the cache's length, as genai's past_present_share_buffer), verified by the tokens it
generates."""

from graphfreeze.formats.onnx_lm.export import FORMAT, STAGE  # noqa: F401
