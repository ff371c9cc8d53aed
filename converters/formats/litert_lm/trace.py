"""The model's own cached forward pass (lm/step.py) traced as LiteRT-LM's signatures:
`prefill_<T>` for each prefill length and `decode` (T = 1), each taking `tokens` [1, T] int32,
`input_pos` [T] int32 and every layer's `kv_cache_k_<i>` / `kv_cache_v_<i>`, and giving `logits`
[1, T, vocab] and the caches updated. Each function is frozen (its weights constants, which the
converter stores once for all signatures) and converted by TFLiteConverter through a SavedModel
holding only those signatures."""

from __future__ import annotations

import tempfile

from graphfreeze.errors import InputError, first_line
from graphfreeze.lm.layout import Layout
from graphfreeze.lm.step import Caches, step

DECODE = "decode"
CACHES = Caches("kv_cache_k_{i}", "kv_cache_v_{i}", "kv_cache_k_{i}", "kv_cache_v_{i}")


def signature_names(prefill_lengths) -> list[str]:
    return [f"prefill_{t}" for t in prefill_lengths] + [DECODE]


def _specs(layout: Layout, length: int) -> list:
    import tensorflow as tf

    return [tf.TensorSpec([1, length], tf.int32, name="tokens"),
            tf.TensorSpec([length], tf.int32, name="input_pos"),
            *[tf.TensorSpec(CACHES.shape(layout), layout.dtype, name=n)
              for n in CACHES.inputs(layout.layers)]]


def _frozen(run, layout: Layout, length: int):
    """The step at `length`, its variables constants, returning its outputs by name."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    def at(tokens, input_pos, *caches):
        return run(tokens, input_pos[0], *caches)

    concrete = tf.function(at, input_signature=_specs(layout, length)).get_concrete_function()
    names = sorted(concrete.structured_outputs)  # the frozen function's flat order
    frozen = convert_variables_to_constants_v2(concrete)

    @tf.function(input_signature=_specs(layout, length))
    def named(*args):
        return dict(zip(names, frozen(*args), strict=True))
    return named


def convert(model, layout: Layout, prefill_lengths, fp16: bool, where: str) -> bytes:
    """The float (or fp16-weight) `.tflite` with every signature."""
    import tensorflow as tf

    run = step(model, layout, CACHES)
    signatures = {name: _frozen(run, layout, length) for name, length in
                  zip(signature_names(prefill_lengths), [*prefill_lengths, 1], strict=True)}
    with tempfile.TemporaryDirectory(prefix="graphfreeze-litert-lm-") as saved:
        tf.saved_model.save(tf.Module(), saved, signatures=signatures,  # frozen: no gradients
                            options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))
        converter = tf.lite.TFLiteConverter.from_saved_model(saved, list(signatures))
        if fp16:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            converter.target_spec.supported_types = [tf.float16]
        try:
            return converter.convert()
        except Exception as err:  # the converter's own message names the op
            raise InputError(f"{where}: TFLiteConverter cannot convert the model's cached "
                             f"forward pass ({first_line(err)})") from err
