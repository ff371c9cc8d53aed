"""Helpers every pass uses: free names and renaming."""

from __future__ import annotations

import tensorflow as tf
from graphfreeze.graph.graphdefs import free_name, rename_nodes

v1 = tf.compat.v1


def test_free_name_skips_taken_names_and_claims_its_own():
    taken = {"x", "x_1"}
    assert free_name("x", taken) == "x_2"
    assert free_name("x", taken) == "x_3"
    assert free_name("y", taken) == "y"
    assert {"x_2", "x_3", "y"} <= taken


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
