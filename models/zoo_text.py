"""Zoo: Keras 3 text and sequence models (recurrent layers, masking, attention), small and
seeded, saved as `.keras`. Each builder returns its zoo.json entry (see zoo.py)."""

from __future__ import annotations

import os

from zoo_keras import _entry, _seed

TEXT_TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "onnx"]
VOCAB = 100


def _save(model, out: str, inputs: list[tuple], targets=TEXT_TARGETS) -> dict:
    model.save(os.path.join(out, "model.keras"))
    entry = _entry("model.keras", (), targets)
    entry["peer"]["inputs"] = [
        {"shape": [1, *shape], "dtype": dtype, **({"high": VOCAB} if dtype == "int32" else {})}
        for shape, dtype in inputs]
    return entry


def _seq2seq(cell: str, out: str) -> dict:
    """Keras' addition_rnn example: one-hot '123+45 ' in, the digits of the sum out."""
    keras = _seed()
    rnn = getattr(keras.layers, cell)
    chars, maxlen, digits = 12, 7, 4
    question = keras.Input((maxlen, chars), name="question")
    x = rnn(32)(question)
    x = keras.layers.RepeatVector(digits)(x)
    x = rnn(32, return_sequences=True)(x)
    answer = keras.layers.Dense(chars, activation="softmax", name="answer")(x)
    return _save(keras.Model(question, answer), out, [((maxlen, chars), "float32")])


def lstm_addition(out: str) -> dict:
    return _seq2seq("LSTM", out)


def gru_seq2seq(out: str) -> dict:
    return _seq2seq("GRU", out)


def bilstm_imdb(out: str) -> dict:
    keras = _seed()
    tokens = keras.Input((20,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(VOCAB, 16, mask_zero=True)(tokens)
    x = keras.layers.Bidirectional(keras.layers.LSTM(8, return_sequences=True))(x)
    x = keras.layers.Bidirectional(keras.layers.LSTM(8))(x)
    score = keras.layers.Dense(1, activation="sigmoid", name="score")(x)
    return _save(keras.Model(tokens, score), out, [((20,), "int32")])


def gru_masked(out: str) -> dict:
    """Padded float sequences: a Masking layer in front of LSTM and GRU."""
    keras = _seed()
    frames = keras.Input((12, 6), name="frames")
    x = keras.layers.Masking(mask_value=0.0)(frames)
    x = keras.layers.LSTM(8, return_sequences=True)(x)
    x = keras.layers.GRU(8)(x)
    probs = keras.layers.Dense(3, activation="softmax", name="probs")(x)
    return _save(keras.Model(frames, probs), out, [((12, 6), "float32")])


def lstm_fcn(out: str) -> dict:
    """LSTM-FCN time-series classifier: an LSTM branch beside a Conv1D/BatchNorm branch."""
    keras = _seed()
    series = keras.Input((32, 1), name="series")
    lstm = keras.layers.Permute((2, 1))(series)
    lstm = keras.layers.LSTM(8)(lstm)
    lstm = keras.layers.Dropout(0.8)(lstm)
    conv = series
    for filters, width in ((16, 8), (32, 5), (16, 3)):
        conv = keras.layers.Conv1D(filters, width, padding="same")(conv)
        conv = keras.layers.BatchNormalization()(conv)
        conv = keras.layers.Activation("relu")(conv)
    conv = keras.layers.GlobalAveragePooling1D()(conv)
    x = keras.layers.concatenate([lstm, conv])
    probs = keras.layers.Dense(4, activation="softmax", name="probs")(x)
    return _save(keras.Model(series, probs), out, [((32, 1), "float32")])


def babi_memory(out: str) -> dict:
    """Keras' bAbI end-to-end memory network: story and question in, answer word out."""
    keras = _seed()
    layers = keras.layers
    story = keras.Input((24,), dtype="int32", name="story")
    question = keras.Input((4,), dtype="int32", name="question")
    m = layers.Dropout(0.3)(layers.Embedding(VOCAB, 16)(story))
    c = layers.Dropout(0.3)(layers.Embedding(VOCAB, 4)(story))
    q = layers.Dropout(0.3)(layers.Embedding(VOCAB, 16)(question))
    match = layers.Activation("softmax")(layers.dot([m, q], axes=(2, 2)))
    response = layers.Permute((2, 1))(layers.add([match, c]))
    answer = layers.concatenate([response, q])
    answer = layers.Dropout(0.3)(layers.LSTM(16)(answer))
    probs = layers.Activation("softmax", name="probs")(layers.Dense(VOCAB)(answer))
    return _save(keras.Model([story, question], probs), out,
                 [((24,), "int32"), ((4,), "int32")])


def _transformer(out: str, approximate: bool) -> dict:
    """A Transformer encoder block: token + position embeddings, MultiHeadAttention,
    LayerNormalization, a GELU feed-forward (exact: Erf/Erfc; or the tanh approximation)."""
    keras = _seed()
    layers, length, width = keras.layers, 16, 32
    tokens = keras.Input((length,), dtype="int32", name="tokens")
    x = layers.Embedding(VOCAB, width)(tokens)
    positions = layers.Embedding(length, width)(keras.ops.arange(length))
    x = x + positions
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)
    x = layers.LayerNormalization(epsilon=1e-6)(x + layers.Dropout(0.1)(attention))
    h = layers.Dense(64)(x)
    h = keras.ops.gelu(h, approximate=approximate)
    h = layers.Dense(width)(layers.Dropout(0.1)(h))
    x = layers.LayerNormalization(epsilon=1e-6)(x + h)
    x = layers.GlobalAveragePooling1D()(x)
    probs = layers.Dense(2, activation="softmax", name="probs")(x)
    return _save(keras.Model(tokens, probs), out, [((length,), "int32")])


def transformer_encoder(out: str) -> dict:
    return _transformer(out, approximate=False)


def transformer_gelu_tanh(out: str) -> dict:
    return _transformer(out, approximate=True)


def builders() -> dict:
    return dict(lstm_addition=lstm_addition, gru_seq2seq=gru_seq2seq, bilstm_imdb=bilstm_imdb,
                gru_masked=gru_masked, lstm_fcn=lstm_fcn, babi_memory=babi_memory,
                transformer_encoder=transformer_encoder,
                transformer_gelu_tanh=transformer_gelu_tanh)
