"""Helpers for pass tests: build small graphs with real TensorFlow ops, run them."""

from __future__ import annotations

import pytest
import tensorflow as tf


@pytest.fixture
def build():
    """build(fn) -> GraphDef of the ops `fn()` creates in a fresh graph."""

    def make(fn):
        graph = tf.Graph()
        with graph.as_default():
            fn()
        return graph.as_graph_def()

    return make


@pytest.fixture
def run():
    """run(graph_def, feeds, fetch) in a fresh session."""

    def execute(graph_def, feeds, fetch):
        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            return sess.run(fetch, feeds)

    return execute
