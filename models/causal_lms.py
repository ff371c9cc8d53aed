"""Tiny keras-hub causal language models (GPT-2, Gemma, Llama), built from their own constructors
offline and trained a few steps on a counting pattern (next token = token + 1), so their greedy
choices are decided, as a trained model's are; each saved as OUT/NAME/model.keras."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
VOCAB, LENGTH = 96, 32


def _models(hub) -> dict:
    common = {"vocabulary_size": VOCAB, "num_layers": 2, "hidden_dim": 32}
    return {
        "gpt2": hub.models.GPT2CausalLM(hub.models.GPT2Backbone(
            num_heads=2, intermediate_dim=64, max_sequence_length=256, **common),
            preprocessor=None),
        "gemma": hub.models.GemmaCausalLM(hub.models.GemmaBackbone(
            num_query_heads=2, num_key_value_heads=1, head_dim=16, intermediate_dim=64,
            **common), preprocessor=None),
        "llama": hub.models.LlamaCausalLM(hub.models.LlamaBackbone(
            num_query_heads=4, num_key_value_heads=2, intermediate_dim=64, **common),
            preprocessor=None),
    }


def _counting(rows: int):
    import numpy as np

    starts = np.random.default_rng(0).integers(0, VOCAB, size=(rows, 1))
    ids = ((starts + np.arange(LENGTH + 1)) % VOCAB).astype("int32")
    x = {"token_ids": ids[:, :-1], "padding_mask": np.ones((rows, LENGTH), bool)}
    return x, ids[:, 1:]


def build(out: str, names=None) -> None:
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    x, y = _counting(256)
    for name, model in _models(keras_hub).items():
        if names and name not in names:
            continue
        model.compile(optimizer=keras.optimizers.Adam(1e-2),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, epochs=12, batch_size=32, verbose=0)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        model.save(os.path.join(out, name, "model.keras"))


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2:])
