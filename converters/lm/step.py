"""A keras-hub CausalLM's own cached forward pass (`call_with_cache`) as one step over per-layer
caches: `step(tokens, start, *caches) -> {logits, <cache names>}`. keras-hub holds the cache as
one tensor [1, layers, 2, length, heads, size]; each format names and lays out the caches its
runtime's convention wants (`Caches`), and the step stacks them in and splits them out."""

from __future__ import annotations

from dataclasses import dataclass

from graphfreeze.lm.layout import Layout


@dataclass(frozen=True)
class Caches:
    """How a format's runtime takes the cache: the names of layer i's key and value (inputs,
    then outputs) and the axes of [1, length, heads, size] it holds them in."""

    key_in: str  # e.g. "kv_cache_k_{i}"
    value_in: str
    key_out: str
    value_out: str
    axes: tuple[int, int, int, int] = (0, 1, 2, 3)  # (0, 2, 1, 3): [1, heads, length, size]

    def inputs(self, layers: int) -> list[str]:
        return [n.format(i=i) for i in range(layers) for n in (self.key_in, self.value_in)]

    def outputs(self, layers: int) -> list[str]:
        return [n.format(i=i) for i in range(layers) for n in (self.key_out, self.value_out)]

    def shape(self, layout: Layout) -> list[int]:
        return [layout.cache_shape()[a] for a in self.axes]


def step(model, layout: Layout, caches: Caches):
    """(tokens [1, T] int, start: the position of tokens[0], *per-layer caches) -> {"logits":
    [1, T, vocab] float32, each cache output}: one cached step of the model's own math."""
    import tensorflow as tf

    def run(tokens, start, *given):
        held = [tf.transpose(c, caches.axes) for c in given]  # (its own inverse)
        pairs = [tf.stack(held[2 * i:2 * i + 2], axis=1) for i in range(layout.layers)]
        logits, _, cache = model.call_with_cache(tokens, tf.stack(pairs, axis=1), start)
        out = {"logits": tf.cast(logits, tf.float32)}
        names = caches.outputs(layout.layers)
        for i in range(layout.layers):
            for kv in range(2):
                out[names[2 * i + kv]] = tf.transpose(cache[:, i, kv], caches.axes)
        return out
    return run


def infos(layout: Layout, caches: Caches, leading: tuple) -> tuple[tuple, tuple]:
    """A step's TensorInfos: `leading` (its token and position inputs) and the caches in;
    `logits` and the caches out (the sidecar's inputs and outputs)."""
    from graphfreeze.tensors import TensorInfo

    shape = tuple(caches.shape(layout))
    given = [TensorInfo(n, layout.dtype, shape) for n in caches.inputs(layout.layers)]
    made = [TensorInfo(n, layout.dtype, shape) for n in caches.outputs(layout.layers)]
    return (*leading, *given), (TensorInfo("logits", "float32", (1, None, layout.vocab_size)),
                                *made)
