"""Audio and regression models for judging quantized targets and for audio front ends (issue 43),
small, seeded and trained on synthetic data (nothing downloaded).

    python models/audio.py OUT_DIR [--only NAME,NAME] [--list]

writes OUT_DIR/NAME/ with the model and OUT_DIR/NAME/zoo.json (path, args, targets, kind, as
models/zoo.py does):
  kws_mel       Keras 3 keyword spotter: waveform -> keras.layers.MelSpectrogram (tf.signal.stft,
                Real^2 + Imag^2, mel matmul, dB) -> conv -> 12-class softmax, trained on 12 tones;
                val.npz: 200 held-out tones (`wave`, `labels`)
  stft_module   tf.Module SavedModel: tf.signal.stft -> Real^2 + Imag^2 -> mel matmul -> log ->
                dense -> 12-class softmax, as hand-written TF front ends compute |STFT|^2
  stft_abs      the same with tf.abs(stft) (ComplexAbs) squared
  regression10  Keras 3 regression whose outputs are ~10-40 (a price, a distance), trained
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RATE, SAMPLES, CLASSES = 8000, 4000, 12
TONES = [250.0 * (k + 1) for k in range(CLASSES)]  # 250 Hz .. 3 kHz, one class each


def tones(count: int, seed: int):
    """`count` half-second waveforms, each one of TONES (random phase and loudness) in noise,
    and their class."""
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, count)
    t = np.arange(SAMPLES) / RATE
    phase = rng.uniform(0, 2 * np.pi, (count, 1))
    loud = rng.uniform(0.2, 1.0, (count, 1))
    waves = loud * np.sin(2 * np.pi * np.array(TONES)[labels][:, None] * t + phase)
    return (waves + rng.normal(0, 0.05, waves.shape)).astype(np.float32), labels


def kws_mel(out: str) -> dict:
    import keras

    keras.utils.set_random_seed(0)
    wave = keras.Input((SAMPLES,), name="wave")
    mel = keras.layers.MelSpectrogram(fft_length=256, sequence_stride=128, sampling_rate=RATE,
                                      num_mel_bins=32, max_freq=RATE / 2, name="mel")(wave)
    x = keras.layers.Permute((2, 1))(mel)  # (frames, mel bins)
    x = keras.layers.Rescaling(1 / 40.0, offset=1.0)(x)  # dB (about -80..0) to about -1..1
    x = keras.layers.Conv1D(16, 3, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    probs = keras.layers.Dense(CLASSES, activation="softmax", name="probs")(x)
    model = keras.Model(wave, probs, name="kws_mel")
    x, y = tones(1200, 0)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=8, batch_size=32, verbose=0)
    model.save(os.path.join(out, "model.keras"))
    import numpy as np

    x, y = tones(200, 7)  # held-out tones: what it is verified (and calibrated) on
    np.savez(os.path.join(out, "val.npz"), wave=x, labels=y)
    return {"path": "model.keras", "args": [], "kind": "keras3",
            "targets": ["tflite", "tflite-dynamic", "edge-int8", "onnx", "onnx-int8"]}


def stft_module(out: str, magnitude: str = "parts") -> dict:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(1)
    mel = tf.signal.linear_to_mel_weight_matrix(32, 129, RATE, 20.0, RATE / 2)

    class FrontEnd(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(rng.normal(0, 0.3, (32, CLASSES)).astype(np.float32))
            self.b = tf.Variable(np.zeros(CLASSES, np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, SAMPLES], tf.float32, name="wave")])
        def __call__(self, wave):
            spec = tf.signal.stft(wave, frame_length=256, frame_step=128, fft_length=256)
            power = tf.math.real(spec) ** 2 + tf.math.imag(spec) ** 2 if magnitude == "parts" \
                else tf.square(tf.abs(spec))
            logmel = tf.math.log(tf.matmul(power, mel) + 1e-6)
            pooled = tf.reduce_mean(logmel, axis=1)
            return {"probs": tf.nn.softmax(tf.matmul(pooled, self.w) + self.b)}

    module = FrontEnd()
    path = os.path.join(out, "saved_model")
    tf.saved_model.save(module, path, signatures=module.__call__)
    return {"path": "saved_model", "args": [], "kind": "savedmodel",
            "targets": ["android", "tflite", "onnx"]}


def regression10(out: str) -> dict:
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (2000, 8)).astype(np.float32)
    y = (25 + 5 * np.tanh(x[:, :4]).sum(1, keepdims=True) + x[:, 4:5] * x[:, 5:6]).astype(
        np.float32)  # about 10..40
    inputs = keras.Input((8,), name="features")
    h = keras.layers.Dense(32, activation="relu")(inputs)
    h = keras.layers.Dense(32, activation="relu")(h)
    value = keras.layers.Dense(1, name="value")(h)
    model = keras.Model(inputs, value, name="regression10")
    model.compile(keras.optimizers.Adam(0.01), "mse")
    model.fit(x, y, epochs=30, batch_size=64, verbose=0)
    model.save(os.path.join(out, "model.keras"))
    return {"path": "model.keras", "args": [], "kind": "keras3",
            "targets": ["tflite", "tflite-dynamic", "edge-int8", "onnx-int8"]}


BUILDERS = {"kws_mel": kws_mel, "stft_module": stft_module,
            "stft_abs": lambda out: stft_module(out, "abs"), "regression10": regression10}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--only", default="")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list or not args.out:
        print("\n".join(BUILDERS))
        return
    names = [n for n in args.only.split(",") if n] or list(BUILDERS)
    unknown = sorted(set(names) - set(BUILDERS))
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(BUILDERS)}")
    for name in names:
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        entry = BUILDERS[name](folder)
        with open(os.path.join(folder, "zoo.json"), "w") as f:
            json.dump(entry, f, indent=2)
        print(f"{name}: {os.path.join(folder, entry['path'])}")


if __name__ == "__main__":
    main()
