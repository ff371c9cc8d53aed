"""Greedy generation as an app runs a language model: the prompt in one call (prefill), then one
token per call (decode), the KV cache handed from each call to the next by the runtime's
`Stepper`; the tokens, each step's logits, and how long each part took."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from graphfreeze.errors import RunError
from graphfreeze.plugins import Session


@dataclass
class Generated:
    tokens: list[int]
    logits: list = field(default_factory=list)  # each step's logits [vocab]
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0

    def tokens_per_second(self) -> float | None:
        steps = len(self.tokens) - 1
        return steps / self.decode_seconds if steps > 0 and self.decode_seconds > 0 else None


class Stepper(Protocol):
    """A runtime's cached step: `start()` empties the cache; `run(tokens, position)` runs
    `tokens` from `position` on and returns their logits [len(tokens), vocab]."""

    cache_len: int
    vocab_size: int

    def start(self) -> None: ...

    def run(self, tokens: list[int], position: int): ...


def greedy(stepper: Stepper, prompt: list[int], new_tokens: int,
           forced: list[int] | None = None) -> Generated:
    """`new_tokens` tokens after `prompt`, each the argmax of its logits; `forced`: fed in place
    of its own choices (so its logits compare step by step with another run's)."""
    import numpy as np

    outside = [t for t in prompt if not 0 <= t < stepper.vocab_size]
    if outside:
        raise RunError(f"prompt token {outside[0]} is outside the vocabulary (0 to "
                       f"{stepper.vocab_size - 1})")
    if len(prompt) + new_tokens > stepper.cache_len:
        raise RunError(f"a prompt of {len(prompt)} tokens and {new_tokens} new ones do not fit "
                       f"its cache of {stepper.cache_len}")
    stepper.start()
    began = time.perf_counter()
    logits = stepper.run(prompt, 0)[len(prompt) - 1]
    made = Generated([], prefill_seconds=time.perf_counter() - began)
    began = time.perf_counter()
    for step in range(new_tokens):
        made.logits.append(np.array(logits))
        made.tokens.append(int(np.argmax(logits)) if forced is None else forced[step])
        if step + 1 < new_tokens:
            logits = stepper.run(made.tokens[-1:], len(prompt) + step)[-1]
    made.decode_seconds = time.perf_counter() - began
    return made


class GeneratingSession(Session):
    """A generative format's `Format.open` session: `generate` (verify_generation, `freeze
    generate`) over its runtime's Stepper."""

    def __init__(self, stepper: Stepper, threads: int, label: str):
        self.stepper, self.threads, self.label = stepper, threads, label

    def generate(self, prompt: list[int], new_tokens: int, forced=None) -> Generated:
        return greedy(self.stepper, prompt, new_tokens, forced)
