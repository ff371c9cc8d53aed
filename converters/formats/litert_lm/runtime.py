"""A litert-lm `.tflite` run as an app runs it: `prefill_<T>` on the prompt (padded to T), then
`decode` one token at a time, the KV cache handed from each call to the next; greedy."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from graphfreeze.errors import RunError
from graphfreeze.plugins import Session

DECODE = "decode"


@dataclass
class Generated:
    tokens: list[int]
    logits: list = field(default_factory=list)  # each step's logits [vocab]
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0

    def tokens_per_second(self) -> float | None:
        steps = len(self.tokens) - 1
        return steps / self.decode_seconds if steps > 0 and self.decode_seconds > 0 else None


class Generator:
    """The artifact's prefill + decode loop in LiteRT's interpreter."""

    def __init__(self, path: str, threads: int = 2):
        from ai_edge_litert.interpreter import Interpreter

        try:
            self.interpreter = Interpreter(model_path=path, num_threads=threads)
            signatures = self.interpreter.get_signature_list()
        except (ValueError, RuntimeError) as err:
            raise RunError(f"LiteRT's interpreter cannot load it ({err})") from err
        self.prefills = sorted(int(n.removeprefix("prefill_")) for n in signatures
                               if n.startswith("prefill_"))
        if DECODE not in signatures or not self.prefills:
            raise RunError(f"has signatures {', '.join(sorted(signatures))}, not prefill_<T> "
                           "and decode: not a litert-lm model")
        self.decode = self.interpreter.get_signature_runner(DECODE)
        details = self.decode.get_input_details()
        self.caches = {n: d for n, d in details.items() if n.startswith("kv_cache_")}
        self.cache_len = int(next(iter(self.caches.values()))["shape"][1])
        self.vocab_size = int(self.decode.get_output_details()["logits"]["shape"][-1])

    def _empty(self) -> dict:
        import numpy as np

        return {n: np.zeros(d["shape"], d["dtype"]) for n, d in self.caches.items()}

    def generate(self, prompt: list[int], new_tokens: int, forced: list[int] | None = None
                 ) -> Generated:
        """Greedy: `new_tokens` tokens after `prompt`; `forced`: feed those tokens instead of
        its own choices (its logits then compare step by step with another run's)."""
        import numpy as np

        length = next((t for t in self.prefills if t >= len(prompt)), None)
        if length is None or len(prompt) + new_tokens > self.cache_len:
            raise RunError(f"a prompt of {len(prompt)} tokens and {new_tokens} new ones do not "
                           f"fit its prefill lengths {self.prefills} and cache of "
                           f"{self.cache_len}")
        tokens = np.zeros([1, length], np.int32)
        tokens[0, :len(prompt)] = prompt
        start = time.perf_counter()
        out = self.interpreter.get_signature_runner(f"prefill_{length}")(
            tokens=tokens, input_pos=np.arange(length, dtype=np.int32), **self._empty())
        result = Generated([], prefill_seconds=time.perf_counter() - start)
        logits, position = out["logits"][0, len(prompt) - 1], len(prompt)
        start = time.perf_counter()
        for step in range(new_tokens):
            result.logits.append(np.array(logits))
            result.tokens.append(int(np.argmax(logits)) if forced is None else forced[step])
            if step + 1 == new_tokens:
                break
            out = self.decode(tokens=np.array([[result.tokens[-1]]], np.int32),
                              input_pos=np.array([position], np.int32),
                              **{n: out[n] for n in self.caches})
            logits, position = out["logits"][0, -1], position + 1
        result.decode_seconds = time.perf_counter() - start
        return result


class GeneratorSession(Session):
    """`Format.open`'s session: the first prefill signature on the feeds it names."""

    def __init__(self, path: str, threads: int):
        self.generator, self.threads = Generator(path, threads), threads
        self.label = "ai-edge-litert"

    def generate(self, prompt: list[int], new_tokens: int) -> Generated:
        """Greedy generation (`freeze generate`); a token outside the vocabulary is refused."""
        outside = [t for t in prompt if not 0 <= t < self.generator.vocab_size]
        if outside:
            raise RunError(f"prompt token {outside[0]} is outside the vocabulary (0 to "
                           f"{self.generator.vocab_size - 1})")
        return self.generator.generate(prompt, new_tokens)

    def run(self, feeds: dict) -> list:
        runner = self.generator.interpreter.get_signature_runner(
            f"prefill_{self.generator.prefills[0]}")
        out = runner(**feeds)
        return [out[k] for k in sorted(out)]


def open_litert_lm(path: str, inputs=(), outputs=(), *, threads: int = 2, keep=(),
                   untrusted: bool = False, loaded=None) -> GeneratorSession:
    return GeneratorSession(path, threads)
