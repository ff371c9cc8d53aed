"""Second zoo: lookup tables, Keras 3 preprocessing layers with string inputs, integer token
inputs and ragged inputs (issue 24), small and seeded. Each builder returns its zoo.json entry
(see zoo.py)."""

from __future__ import annotations

import os

COLORS = ["red", "green", "blue", "cyan", "magenta", "yellow"]
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog"]
# what the peers reach on these models: TFLiteConverter (builtins: string<->int64 tables, no
# string ops), tf2onnx (string->int64 tables, no ragged), openvino.convert_model (tables and
# string ops with openvino-tokenizers)
STRING_TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic"]


def _entry(inputs: list[dict], targets=STRING_TARGETS, kind="savedmodel", args=()) -> dict:
    return {"path": "saved_model", "args": list(args), "targets": list(targets), "kind": kind,
            "peer": {"format": "saved_model", "inputs": inputs}}


def _save(module, out: str, serve) -> None:
    import tensorflow as tf

    tf.saved_model.save(module, os.path.join(out, "saved_model"),
                        signatures={"serving_default": serve})


def static_hash_table(out: str) -> dict:
    """A TF2 SavedModel with `tf.lookup.StaticHashTable`s: a color (lower-cased as UTF-8) ->
    int64 id (then an embedding row), the id -> the color's name (a string output), and an
    int64 code -> float weight (a table TFLite's builtins cannot hold: android, server).
    Signature `tokens`: token ids into the embedding; `mutable`: a MutableHashTable lookup."""
    import numpy as np
    import tensorflow as tf

    class Tables(tf.Module):
        def __init__(self):
            super().__init__()
            self.colors = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
                tf.constant(COLORS), tf.range(len(COLORS), dtype=tf.int64)), default_value=-1)
            self.codes = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
                tf.constant([3, 7, 11, 42], tf.int64), tf.constant([0.5, 1.5, 2.5, 3.5])),
                default_value=0.0)
            self.names = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
                tf.range(len(COLORS), dtype=tf.int64), tf.constant(COLORS)), default_value="?")
            rng = np.random.default_rng(0)
            self.embedding = tf.Variable(
                rng.standard_normal((len(COLORS) + 1, 4)).astype(np.float32), name="embedding")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="color"),
                                      tf.TensorSpec([None], tf.int64, name="code")])
        def serve(self, color, code):
            ids = self.colors.lookup(tf.strings.lower(color, encoding="utf-8"))
            rows = tf.gather(self.embedding, ids + 1)
            return {"ids": ids, "name": self.names.lookup(ids),
                    "vector": rows * tf.expand_dims(self.codes.lookup(code), -1)}

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.int32, name="tokens")])
        def tokens(self, tokens):  # ids 0..6 index the embedding's 7 rows
            return {"pooled": tf.reduce_mean(tf.gather(self.embedding, tokens), axis=1)}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="word")])
        def mutable(self, word):  # a table filled at run time: refused
            return {"id": self.filled.lookup(word)}

    module = Tables()
    module.filled = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
    module.filled.insert(tf.constant(WORDS), tf.range(len(WORDS), dtype=tf.int64))
    tf.saved_model.save(module, os.path.join(out, "saved_model"), signatures={
        "serving_default": module.serve, "tokens": module.tokens, "mutable": module.mutable})
    return _entry([{"name": "color", "shape": [1], "dtype": "string"},
                   {"name": "code", "shape": [1], "dtype": "int64"}], targets=["android", "server"])


def tf1_table_savedmodel(out: str) -> dict:
    """A TF1 SavedModel (SavedModelBuilder, `main_op=tables_initializer()`, as Estimator
    exports are) whose word -> id table feeds an embedding lookup."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        word = v1.placeholder(tf.string, [None], name="word")
        table = v1.lookup.StaticHashTable(v1.lookup.KeyValueTensorInitializer(
            tf.constant(WORDS), tf.range(len(WORDS), dtype=tf.int64)), -1)
        weights = v1.get_variable("embedding", [len(WORDS) + 1, 4],
                                  initializer=v1.random_normal_initializer(seed=0))
        vector = tf.gather(weights, table.lookup(word) + 1, name="vector")
        sess.run([v1.global_variables_initializer(), v1.tables_initializer()])
        builder = v1.saved_model.Builder(os.path.join(out, "saved_model"))
        builder.add_meta_graph_and_variables(
            sess, ["serve"], main_op=v1.tables_initializer(),
            signature_def_map={"serving_default": v1.saved_model.predict_signature_def(
                {"word": word}, {"vector": vector})})
        builder.save()
    return _entry([{"name": "word", "shape": [1], "dtype": "string"}])


def mutable_hash_table(out: str) -> dict:
    """A `tf.lookup.experimental.MutableHashTable` whose contents are inserted at run time:
    nothing to freeze, refused in one line."""
    import tensorflow as tf

    class Mutable(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="word")])
        def serve(self, word):
            return {"id": self.table.lookup(word)}

    module = Mutable()
    module.table.insert(tf.constant(WORDS), tf.range(len(WORDS), dtype=tf.int64))
    _save(module, out, module.serve)
    return _entry([{"name": "word", "shape": [1], "dtype": "string"}], targets=[])


def _keras_export(model, out: str, inputs: list[dict], targets=STRING_TARGETS) -> dict:
    model.export(os.path.join(out, "saved_model"), verbose=False)
    return _entry(inputs, targets)


def _keras():
    import keras

    keras.utils.set_random_seed(0)
    return keras


def keras_string_lookup(out: str) -> dict:
    """Keras 3 StringLookup -> Embedding -> Dense on a [batch, 3] string input, exported by
    `model.export`."""
    keras = _keras()
    color = keras.Input((3,), dtype="string", name="color")
    ids = keras.layers.StringLookup(vocabulary=COLORS)(color)
    x = keras.layers.Embedding(len(COLORS) + 1, 4)(ids)
    x = keras.layers.GlobalAveragePooling1D()(x)
    probs = keras.layers.Dense(2, activation="softmax", name="probs")(x)
    return _keras_export(keras.Model(color, probs), out,
                         [{"name": "color", "shape": [1, 3], "dtype": "string"}],
                         targets=[*STRING_TARGETS, "onnx"])


def keras_text_vectorization(out: str) -> dict:
    """Keras 3 TextVectorization (lower case, strip punctuation, split on whitespace, a
    vocabulary table, padded to 6 tokens) -> Embedding -> Dense, exported by `model.export`."""
    keras = _keras()
    text = keras.Input((1,), dtype="string", name="text")
    vectorize = keras.layers.TextVectorization(max_tokens=20, output_sequence_length=6,
                                               vocabulary=WORDS)
    ids = vectorize(text)
    x = keras.layers.Embedding(20, 4)(ids)
    x = keras.layers.GlobalAveragePooling1D()(x)
    score = keras.layers.Dense(1, activation="sigmoid", name="score")(x)
    return _keras_export(keras.Model(text, score), out,
                         [{"name": "text", "shape": [1, 1], "dtype": "string"}],
                         targets=["android", "server", "openvino"])  # openvino-tokenizers


def keras_hashing(out: str) -> dict:
    """Keras 3 Hashing (no table: FarmHash buckets) -> Embedding -> Dense."""
    keras = _keras()
    word = keras.Input((2,), dtype="string", name="word")
    ids = keras.layers.Hashing(num_bins=16)(word)
    x = keras.layers.Embedding(16, 4)(ids)
    x = keras.layers.Flatten()(x)
    score = keras.layers.Dense(1, name="score")(x)
    return _keras_export(keras.Model(word, score), out,
                         [{"name": "word", "shape": [1, 2], "dtype": "string"}],
                         targets=["android", "server"])  # StringToHashBucketFast: no peer


def token_embedding(out: str) -> dict:
    """Integer token ids feeding a 7-row Embedding: ids over 6 are out of the vocabulary."""
    keras = _keras()
    tokens = keras.Input((5,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(7, 4)(tokens)
    x = keras.layers.GlobalAveragePooling1D()(x)
    score = keras.layers.Dense(1, name="score")(x)
    return _keras_export(keras.Model(tokens, score), out,
                         [{"name": "tokens", "shape": [1, 5], "dtype": "int32", "high": 7}],
                         targets=["android", "server", "tflite", "tflite-fp16",
                                  "tflite-dynamic", "edge-int8", "onnx", "openvino"])


def _word_means(out: str, spec, to_words) -> None:
    """A SavedModel: `to_words(input)` (ragged words), each looked up in a table of WORDS, the
    ids' embeddings averaged per row."""
    import numpy as np
    import tensorflow as tf

    class Words(tf.Module):
        def __init__(self):
            super().__init__()
            self.words = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
                tf.constant(WORDS), tf.range(len(WORDS), dtype=tf.int64)), default_value=-1)
            rng = np.random.default_rng(0)
            self.embedding = tf.Variable(
                rng.standard_normal((len(WORDS) + 1, 4)).astype(np.float32), name="embedding")

        @tf.function(input_signature=[spec])
        def serve(self, given):
            ids = tf.ragged.map_flat_values(self.words.lookup, to_words(given)) + 1
            rows = tf.ragged.map_flat_values(tf.gather, self.embedding, ids)
            return {"mean": tf.reduce_mean(rows, axis=1)}

    module = Words()
    _save(module, out, module.serve)


def ragged_lookup(out: str) -> dict:
    """A table lookup on a ragged string input (`tf.RaggedTensorSpec` in the signature), the
    looked-up ids' embeddings averaged per row."""
    import tensorflow as tf

    _word_means(out, tf.RaggedTensorSpec([None, None], tf.string), lambda words: words)
    return _entry([{"name": "words", "shape": [1, 3], "dtype": "string", "ragged": True}])


def string_split(out: str) -> dict:
    """Text with punctuation stripped by a regex, split on spaces (StaticRegexReplace,
    StringSplitV2: onnxruntime-extensions' ops in ONNX), then as ragged_lookup."""
    import tensorflow as tf

    _word_means(out, tf.TensorSpec([None], tf.string, name="text"), lambda text: tf.strings.split(
        tf.strings.regex_replace(text, "[,.!?]", ""), sep=" "))
    return _entry([{"name": "text", "shape": [1], "dtype": "string"}],
                  targets=["android", "server", "onnx"])


def builders() -> dict:
    return {f.__name__: f for f in (static_hash_table, tf1_table_savedmodel, mutable_hash_table,
                                    keras_string_lookup,
                                    keras_text_vectorization, keras_hashing, token_embedding,
                                    ragged_lookup, string_split)}
