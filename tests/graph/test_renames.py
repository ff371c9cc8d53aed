"""Nodes renamed with every reference to them."""

from __future__ import annotations

import tensorflow as tf
from graphfreeze.graph.renames import rename_nodes

v1 = tf.compat.v1


def test_rename_moves_a_clashing_node_aside_and_rewires_every_reference(build):
    def model():
        x = v1.placeholder(tf.float32, [None, 2], name="serving_x")
        image = tf.identity(x, name="image")  # already called what the input is to become
        tf.add(image, x, name="y")

    graph, done = rename_nodes(build(model), {"serving_x": "image"})
    assert done == {"serving_x": "image", "image": "image_1"}
    by_name = {n.name: n for n in graph.node}
    assert by_name["image"].op == "Placeholder"
    assert list(by_name["image_1"].input) == ["image"]
    assert list(by_name["y"].input) == ["image_1", "image"]
