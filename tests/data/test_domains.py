"""data/domains: what an input takes, read from the frozen graph it feeds."""

from __future__ import annotations

from graphfreeze.data.domains import Domain, domains
from graphfreeze.tensors import TensorInfo


def _graph():
    """text -> lower (UTF-8) -> split -> frozen table lookup; tokens -> cast -> embedding
    gather; words + words_1 a ragged input (values, row splits)."""
    import tensorflow as tf
    from graphfreeze.graph.tables import TABLE_INIT

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        text = v1.placeholder(tf.string, [None], name="text")
        table = tf.raw_ops.HashTableV2(key_dtype=tf.string, value_dtype=tf.int64,
                                       shared_name="hash_table", name="hash_table")
        init = tf.raw_ops.LookupTableImportV2(table_handle=table, keys=tf.constant(["a", "b"]),
                                              values=tf.constant([0, 1], tf.int64))
        tf.group(init, name=TABLE_INIT)
        words = tf.strings.split(tf.strings.lower(text, encoding="utf-8")).flat_values
        tf.raw_ops.LookupTableFindV2(table_handle=table, keys=words,
                                     default_value=tf.constant(-1, tf.int64), name="ids")
        tokens = v1.placeholder(tf.int64, [None, 4], name="tokens")
        tf.gather(tf.zeros([7, 3]), tf.cast(tokens, tf.int32), name="embedded")
        values = v1.placeholder(tf.float32, [None], name="words")
        splits = v1.placeholder(tf.int64, [None], name="words_1")
        tf.identity(tf.RaggedTensor.from_row_splits(values, splits).to_tensor(), name="dense")
    return graph.as_graph_def()


def test_table_keys_words_utf8_vocabulary_and_ragged_splits_are_read_from_the_graph():
    infos = [TensorInfo("text:0", "string", (None,)), TensorInfo("tokens:0", "int64", (None, 4)),
             TensorInfo("words:0", "float32", (None,)), TensorInfo("words_1:0", "int64", (None,))]
    found = domains(_graph(), infos)
    text = found["text:0"]
    assert text.keys == (b"a", b"b") and text.words and text.utf8.endswith("StringLower")
    assert found["tokens:0"] == Domain(vocabulary=7)
    assert found["words_1:0"] == Domain(splits_of="words:0")
    assert "words:0" not in found
