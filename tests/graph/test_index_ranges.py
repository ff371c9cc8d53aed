"""The range of an integer input, read from what the graph does with it."""

from __future__ import annotations

import numpy as np
from graphfreeze.graph.index_ranges import input_ranges


def _graph():
    """Keras' `take` (negative ids wrap) into a 7-row table, a mask cast to bool, a plain
    integer added to a float."""
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        ids = tf.compat.v1.placeholder(tf.int32, [1, 4], name="ids")
        mask = tf.compat.v1.placeholder(tf.int32, [1, 4], name="mask")
        count = tf.compat.v1.placeholder(tf.int32, [1, 4], name="count")
        table = tf.constant(np.arange(21, dtype=np.float32).reshape(7, 3))
        wrapped = tf.where(ids < 0, ids + 7, ids)
        rows = tf.gather(table, tf.reshape(wrapped, [-1]))
        keep = tf.cast(tf.cast(mask, tf.bool), tf.float32)
        tf.identity(tf.reduce_sum(rows) * tf.reduce_sum(keep) + tf.cast(count, tf.float32),
                    name="out")
    return graph.as_graph_def()


def test_ranges_come_from_the_table_and_the_bool_cast():
    ranges = input_ranges(_graph(), ["ids:0", "mask:0", "count:0"])
    assert ranges == {"ids": (0, 7), "mask": (0, 2)}
