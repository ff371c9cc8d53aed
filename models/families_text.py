"""Second zoo: TF-Text tokenizer models (issue 24), small and seeded, saved as TF2 SavedModels
whose signature takes a batch of strings. Each builder returns its zoo.json entry (see
models/zoo.py); loading them back needs `import tensorflow_text` (the `text` extra)."""

from __future__ import annotations

import os

# what each converts to: TFLite runs FastBertNormalize, FastWordpiece and WhitespaceV2 with
# TF-Text's kernels (not SentencePiece's resource ops); tf2onnx maps SentencePiece only
TFLITE = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic"]
ONNX = ["android", "server", "onnx"]
WORDS = ["[PAD]", "[UNK]", "the", "a", "cat", "dog", "sat", "on", "mat", "##s", "##ed", "run",
         "##ning", "big", "red", "blue", "and", "is", "it", "."]
SENTENCES = ["the cat sat on the mat", "a big red dog is running", "it is a blue mat and a cat",
             "dogs and cats sat", "the red cat ran on a big blue mat", "a dog is a dog"]
MAX_TOKENS = 8


def _head(tf, ids, vocab: int, name: str) -> dict:
    """Padded ids -> a seeded embedding, mean over the tokens, a dense layer: `score`."""
    import numpy as np

    rng = np.random.default_rng(7)
    table = tf.constant(rng.normal(size=(vocab, 4)).astype(np.float32))
    dense = tf.constant(rng.normal(size=(4, 2)).astype(np.float32))
    dense_ids = ids.to_tensor(default_value=0, shape=[None, MAX_TOKENS])
    mask = tf.cast(dense_ids > 0, tf.float32)[..., None]
    vectors = tf.gather(table, dense_ids) * mask
    pooled = tf.reduce_sum(vectors, 1) / (tf.reduce_sum(mask, 1) + 1.0)
    return {name: tf.cast(dense_ids, tf.int32), "score": tf.matmul(pooled, dense)}


def _save(out: str, targets: list[str], serve, *tracked) -> dict:
    import tensorflow as tf

    module = tf.Module()
    module.serve, module.tracked = serve, list(tracked)  # resources the function captures
    tf.saved_model.save(module, os.path.join(out, "saved_model"),
                        signatures={"serving_default": serve})
    return {"path": "saved_model", "args": [], "targets": list(targets), "kind": "savedmodel",
            "peer": {"format": "saved_model", "op_library": "tensorflow_text",
                     "inputs": [{"name": "text", "shape": [2], "dtype": "string"}]}}


def _spec(tf):
    return [tf.TensorSpec([None], tf.string, name="text")]


def tftext_bert(out: str) -> dict:
    """FastBertNormalizer (lower case, accents stripped) + FastWordpieceTokenizer on a 20-word
    vocabulary: the ids (padded to 8) and a numeric head on them."""
    import tensorflow as tf
    import tensorflow_text as text

    normalizer = text.FastBertNormalizer(lower_case_nfd_strip_accents=True)
    wordpiece = text.FastWordpieceTokenizer(WORDS, token_out_type=tf.int64, unknown_token="[UNK]")

    @tf.function(input_signature=_spec(tf))
    def serve(text_in):
        ids = wordpiece.tokenize(normalizer.normalize(text_in))
        return _head(tf, ids.merge_dims(-2, -1) if ids.ragged_rank > 1 else ids, len(WORDS),
                     "ids")

    return _save(out, TFLITE, serve)


def tftext_whitespace(out: str) -> dict:
    """WhitespaceTokenizer: each token's byte length (from its offsets), padded, as ids."""
    import tensorflow as tf
    import tensorflow_text as text

    tokenizer = text.WhitespaceTokenizer()

    @tf.function(input_signature=_spec(tf))
    def serve(text_in):
        _, starts, ends = tokenizer.tokenize_with_offsets(text_in)
        lengths = tf.minimum(ends.values - starts.values, len(WORDS) - 1)  # no RaggedRange
        return _head(tf, tf.RaggedTensor.from_row_splits(lengths, ends.row_splits), len(WORDS),
                     "lengths")

    return _save(out, TFLITE, serve)


def _sentencepiece_model() -> bytes:
    """A 40-piece unigram model trained offline on SENTENCES (seeded, single-threaded)."""
    import io

    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SENTENCES * 20), model_writer=model, vocab_size=40,
        model_type="unigram", num_threads=1, minloglevel=2,
        hard_vocab_limit=False)
    return model.getvalue()


def tftext_sentencepiece(out: str) -> dict:
    """SentencepieceTokenizer (SentencepieceOp + SentencepieceTokenizeOp) on a tiny model."""
    import tensorflow as tf
    import tensorflow_text as text

    tokenizer = text.SentencepieceTokenizer(model=_sentencepiece_model(), out_type=tf.int32)

    @tf.function(input_signature=_spec(tf))
    def serve(text_in):
        ids = tokenizer.tokenize(text_in)
        return _head(tf, tf.cast(ids, tf.int64), 64, "ids")

    return _save(out, ONNX, serve, tokenizer)


def tftext_fast_sentencepiece(out: str) -> dict:
    """FastSentencepieceTokenizer (TFText>FastSentencepieceTokenize, the model a constant): the
    SentencePiece TF-Text ships a TFLite kernel for."""
    import tensorflow as tf
    import tensorflow_text as text

    tokenizer = text.FastSentencepieceTokenizer(_sentencepiece_model())

    @tf.function(input_signature=_spec(tf))
    def serve(text_in):
        return _head(tf, tf.cast(tokenizer.tokenize(text_in), tf.int64), 64, "ids")

    return _save(out, TFLITE, serve, tokenizer)


def builders() -> dict:
    return {"tftext_bert": tftext_bert, "tftext_whitespace": tftext_whitespace,
            "tftext_sentencepiece": tftext_sentencepiece,
            "tftext_fast_sentencepiece": tftext_fast_sentencepiece}
