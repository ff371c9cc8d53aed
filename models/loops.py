"""Loops and branches that read variables inside their bodies (issue 43): a greedy GRU decoder
(`tf.while_loop` over a Keras GRUCell, a TensorArray of tokens, the embedding gathered inside the
loop), loops whose bodies read their weights through `tf.cond` and `tf.switch_case`, and a Keras
BatchNormalization called in training mode (its moving statistics assigned in the call), each a
TF2 SavedModel, small and seeded. Each builder returns its zoo.json entry (see zoo.py).

    python models/loops.py OUT_DIR [--only NAME,NAME] [--list]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

VOCAB, WIDTH, STEPS = 12, 8, 6
TARGETS = ["android", "server", "tflite", "onnx", "openvino"]


def _entry(inputs: list[dict], targets=TARGETS) -> dict:
    return {"path": "saved_model", "args": [], "targets": list(targets), "kind": "savedmodel",
            "peer": {"format": "saved_model", "inputs": inputs}}


def _save(module, out: str, serve) -> None:
    import tensorflow as tf

    tf.saved_model.save(module, os.path.join(out, "saved_model"),
                        signatures={"serving_default": serve})


def greedy_decoder(out: str) -> dict:
    """`decode(start [batch] int32, state [batch, WIDTH])`: STEPS steps of embedding row (a
    gather of the variable inside the loop) -> Keras GRUCell -> logits -> argmax, the tokens
    written to a TensorArray; outputs the tokens [batch, STEPS], the last logits and the last
    hidden state."""
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)

    class Decoder(tf.Module):
        def __init__(self):
            super().__init__()
            self.embedding = tf.Variable(rng.standard_normal((VOCAB, WIDTH)).astype(np.float32),
                                         name="embedding")
            self.cell = keras.layers.GRUCell(WIDTH)
            self.cell.build((None, WIDTH))
            self.project = tf.Variable(rng.standard_normal((WIDTH, VOCAB)).astype(np.float32),
                                       name="project")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="start"),
                                      tf.TensorSpec([None, WIDTH], tf.float32, name="state")])
        def decode(self, start, state):
            tokens = tf.TensorArray(tf.int32, size=STEPS)
            logits = tf.zeros([tf.shape(start)[0], VOCAB])

            def body(i, token, h, logits, tokens):
                x = tf.gather(self.embedding, token)
                h, _ = self.cell(x, [h])
                logits = tf.matmul(h, self.project)
                token = tf.argmax(logits, axis=-1, output_type=tf.int32)
                return i + 1, token, h, logits, tokens.write(i, token)

            _, _, h, logits, tokens = tf.while_loop(
                lambda i, *_: i < STEPS, body, (tf.constant(0), start, state, logits, tokens))
            return {"tokens": tf.transpose(tokens.stack()), "logits": logits, "hidden": h}

    module = Decoder()
    _save(module, out, module.decode)
    return _entry([{"name": "start", "shape": [2], "dtype": "int32", "high": VOCAB},
                   {"name": "state", "shape": [2, WIDTH], "dtype": "float32"}])


def _weight(rng, *shape):
    import numpy as np
    import tensorflow as tf

    return tf.Variable((rng.standard_normal(shape) / np.sqrt(WIDTH)).astype(np.float32))


def branchy_loop(out: str) -> dict:
    """`run(x [batch, WIDTH])`: a loop of 4 steps whose body multiplies by one of two weight
    variables through `tf.cond` (an If in the While body reading them), then a top-level
    `tf.cond` on the input's sum reading a third weight."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(1)

    class Branchy(tf.Module):
        def __init__(self):
            super().__init__()
            self.even, self.odd, self.last = (_weight(rng, WIDTH, WIDTH) for _ in range(3))
            self.bias = _weight(rng, WIDTH)

        @tf.function(input_signature=[tf.TensorSpec([None, WIDTH], tf.float32, name="x")])
        def run(self, x):
            def body(i, h):
                h = tf.cond(i % 2 == 0, lambda: tf.matmul(h, self.even),
                            lambda: tf.matmul(h, self.odd) + self.bias)
                return i + 1, tf.tanh(h)

            _, h = tf.while_loop(lambda i, _: i < 4, body, (tf.constant(0), x))
            y = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.matmul(h, self.last), lambda: h)
            return {"y": y}

    module = Branchy()
    _save(module, out, module.run)
    return _entry([{"name": "x", "shape": [2, WIDTH], "dtype": "float32"}])


def case_loop(out: str) -> dict:
    """`run(x [batch, WIDTH])`: a loop of 3 steps whose body adds one of three bias variables
    through `tf.switch_case` (a Case in the While body). TFLiteConverter, tf2onnx and OpenVINO
    cannot convert it from the SavedModel either: android and server."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(3)

    class Cased(tf.Module):
        def __init__(self):
            super().__init__()
            self.biases = [_weight(rng, WIDTH) for _ in range(3)]

        @tf.function(input_signature=[tf.TensorSpec([None, WIDTH], tf.float32, name="x")])
        def run(self, x):
            def body(i, h):
                return i + 1, tf.tanh(h + tf.switch_case(i % 3, [lambda b=b: b
                                                                   for b in self.biases]))

            return {"y": tf.while_loop(lambda i, _: i < 3, body, (tf.constant(0), x))[1]}

    module = Cased()
    _save(module, out, module.run)
    return _entry([{"name": "x", "shape": [2, WIDTH], "dtype": "float32"}],
                  targets=["android", "server"])


def training_batch_norm(out: str) -> dict:
    """`run(x [batch, WIDTH])`: Dense -> Keras BatchNormalization called with training=True
    (the moving mean and variance assigned in the call: AssignVariableOps beside the reads) ->
    Dense, as an exported model whose layer is called in training mode."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(2)

    class Normed(tf.Module):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(WIDTH)
            self.norm = keras.layers.BatchNormalization()
            self.head = keras.layers.Dense(3)
            for layer in (self.dense, self.norm, self.head):
                layer.build((None, WIDTH))

        @tf.function(input_signature=[tf.TensorSpec([None, WIDTH], tf.float32, name="x")])
        def run(self, x):
            return {"y": self.head(self.norm(self.dense(x), training=True))}

    module = Normed()
    _save(module, out, module.run)
    # tflite: an unknown batch converts as 1, so the batch statistics are over one example
    # (TFLiteConverter's own artifact is off by 1e21 at a batch of 4): refused by verification
    return _entry([{"name": "x", "shape": [4, WIDTH], "dtype": "float32"}],
                  targets=["android", "server", "onnx", "openvino"])


def scatter_cache(out: str) -> dict:
    """`run(x [2, WIDTH])`: rows scattered into a cache variable, then the cache read back (a
    state written and read in one call, as a decoder's key/value cache): no frozen graph holds
    it, so every target refuses it, as a limitation of graphfreeze, not of the file."""
    import numpy as np
    import tensorflow as tf

    class Cache(tf.Module):
        def __init__(self):
            super().__init__()
            self.cache = tf.Variable(np.zeros((4, WIDTH), np.float32))

        @tf.function(input_signature=[tf.TensorSpec([2, WIDTH], tf.float32, name="x")])
        def run(self, x):
            self.cache.scatter_nd_update([[1], [3]], x)
            return {"y": tf.reduce_sum(self.cache.read_value(), axis=0)}

    module = Cache()
    _save(module, out, module.run)
    return _entry([{"name": "x", "shape": [2, WIDTH], "dtype": "float32"}], targets=[])


def assign_then_read(out: str) -> dict:
    """`run(x [1, WIDTH])`: a state variable assigned 3x, then read back plus one (a stateful
    model's state written and read in one call): freezing would drop the assign and answer the
    saved state, so every target refuses it, as a limitation of graphfreeze."""
    import numpy as np
    import tensorflow as tf

    class State(tf.Module):
        def __init__(self):
            super().__init__()
            self.state = tf.Variable(np.zeros((1, WIDTH), np.float32), name="state")

        @tf.function(input_signature=[tf.TensorSpec([1, WIDTH], tf.float32, name="x")])
        def run(self, x):
            self.state.assign(x * 3.0)
            return {"y": self.state.read_value() + 1.0}

    module = State()
    _save(module, out, module.run)
    return _entry([{"name": "x", "shape": [1, WIDTH], "dtype": "float32"}], targets=[])


def builders() -> dict:
    return {"greedy_decoder": greedy_decoder, "branchy_loop": branchy_loop,
            "case_loop": case_loop, "training_batch_norm": training_batch_norm,
            "scatter_cache": scatter_cache, "assign_then_read": assign_then_read}


if __name__ == "__main__":
    import zoo

    sys.exit(zoo.main(modules=(sys.modules[__name__],), doc=__doc__))
