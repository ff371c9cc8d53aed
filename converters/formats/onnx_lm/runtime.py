"""An onnx-lm `.onnx` run as an app runs it (lm/generation.py's greedy loop) in onnxruntime: the
prompt in one call, then one token per call, `present.<i>.*` handed back as `past_key_values.<i>.*`."""

from __future__ import annotations

from graphfreeze.errors import RunError
from graphfreeze.lm.generation import GeneratingSession

PAST, PRESENT = "past_key_values.", "present."
CACHE_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64"}


class Stepper:
    """lm/generation's Stepper over the model's one graph (any number of tokens per call)."""

    def __init__(self, path: str, threads: int = 2):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        try:
            self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime's own errors have no common base
            raise RunError(f"onnxruntime cannot load it ({str(err).splitlines()[0]})") from err
        inputs = {i.name: i for i in self.session.get_inputs()}
        self.caches = {n: [1 if isinstance(d, str) else d for d in i.shape]
                       for n, i in inputs.items() if n.startswith(PAST)}
        # the cache's element type, as the model takes it (a float16 Keras model's is float16)
        self.dtypes = {n: CACHE_TYPES.get(inputs[n].type, "float32") for n in self.caches}
        if not self.caches or "input_ids" not in inputs:
            raise RunError(f"has inputs {', '.join(inputs)}, not input_ids and "
                           "past_key_values.<i>.key/value: not an onnx-lm model")
        self.cache_len = int(next(iter(self.caches.values()))[2])
        self.vocab_size = int(self.session.get_outputs()[0].shape[-1])
        self.names = [o.name for o in self.session.get_outputs()]
        self.held: dict = {}

    def start(self) -> None:
        import numpy as np

        self.held = {n: np.zeros(shape, self.dtypes[n]) for n, shape in self.caches.items()}

    def run(self, tokens: list[int], position: int):
        import numpy as np

        feeds = {"input_ids": np.array([tokens], np.int64),
                 "position_ids": np.arange(position, position + len(tokens), dtype=np.int64)[None],
                 **self.held}
        out = dict(zip(self.names, self.session.run(None, feeds), strict=True))
        self.held = {n: out[PRESENT + n.removeprefix(PAST)] for n in self.caches}
        return out["logits"][0]


def open_onnx_lm(path: str, inputs=(), outputs=(), *, threads: int = 2, keep=(),
                 untrusted: bool = False, loaded=None) -> GeneratingSession:
    return GeneratingSession(Stepper(path, threads), threads, "onnxruntime")
