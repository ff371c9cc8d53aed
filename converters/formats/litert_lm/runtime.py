"""A litert-lm `.tflite` run as an app runs it (lm/generation.py's greedy loop): `prefill_<T>` on
the prompt padded to the shortest T that holds it, then `decode` one token at a time, the KV
cache handed from each call to the next, in LiteRT's interpreter."""

from __future__ import annotations

from graphfreeze.errors import RunError
from graphfreeze.formats.litert_lm.trace import DECODE
from graphfreeze.lm.generation import GeneratingSession


class Stepper:
    """lm/generation's Stepper over the file's signatures."""

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
        self.caches = {n: d for n, d in self.decode.get_input_details().items()
                       if n.startswith("kv_cache_")}
        if not self.caches or "logits" not in self.decode.get_output_details():
            raise RunError("its decode signature has no kv_cache_<i> inputs and logits output: "
                           "not a litert-lm model")
        self.cache_len = int(next(iter(self.caches.values()))["shape"][1])
        self.vocab_size = int(self.decode.get_output_details()["logits"]["shape"][-1])
        self.held: dict = {}

    def start(self) -> None:
        import numpy as np

        self.held = {n: np.zeros(d["shape"], d["dtype"]) for n, d in self.caches.items()}

    def run(self, tokens: list[int], position: int):
        import numpy as np

        if len(tokens) == 1:
            runner, length = self.decode, 1
        else:
            length = next((t for t in self.prefills if t >= len(tokens)), None)
            if length is None:
                raise RunError(f"a prompt of {len(tokens)} tokens is longer than its prefill "
                               f"lengths {self.prefills}")
            runner = self.interpreter.get_signature_runner(f"prefill_{length}")
        padded = np.zeros([1, length], np.int32)
        padded[0, :len(tokens)] = tokens
        out = runner(tokens=padded, input_pos=np.arange(position, position + length,
                                                        dtype=np.int32), **self.held)
        self.held = {n: out[n] for n in self.caches}
        return out["logits"][0, :len(tokens)]


def open_litert_lm(path: str, inputs=(), outputs=(), *, threads: int = 2, keep=(),
                   untrusted: bool = False, loaded=None) -> GeneratingSession:
    return GeneratingSession(Stepper(path, threads), threads, "ai-edge-litert")
