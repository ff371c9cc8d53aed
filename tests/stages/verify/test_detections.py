"""A detector's outputs compared as detections: which outputs an NMS selects (read from the
graph), each row's detections matched to the original's, and their unit (range, at least 1)."""

from __future__ import annotations

import numpy as np
from graphfreeze.graph.composites import detection_outputs
from graphfreeze.stages.verify.detections import match, unit


def test_swapped_detections_are_matched_row_by_row():
    boxes = np.array([[[0, 0, 4, 4], [10, 10, 20, 20], [0, 0, 0, 0]],
                      [[5, 5, 9, 9], [1, 1, 2, 2], [3, 3, 6, 6]]], np.float32)
    scores = np.array([[0.80, 0.79, 0.0], [0.9, 0.5, 0.4]], np.float32)
    got_boxes = boxes[:, [1, 0, 2]] + 0.1  # near-tied scores ranked the other way, in row 0
    got_boxes[1] = boxes[1] + 0.1
    got_scores = scores.copy()
    got_scores[0] = scores[0, [1, 0, 2]]
    count = np.array([2, 3], np.int32)  # one a row: no detection axis, left as it is
    names = ["boxes:0", "scores:0", "count:0"]
    matched = match(names, [boxes, scores, count], [got_boxes, got_scores, count],
                    set(names), rows=2)
    np.testing.assert_allclose(matched[0], boxes + 0.1)
    np.testing.assert_allclose(matched[1], scores)
    assert matched[2] is count


def test_one_image_a_run_is_split_into_rows_and_equal_outputs_stay_put():
    boxes = np.arange(2 * 3 * 4, dtype=np.float32).reshape(6, 4)  # 2 images x 3, concatenated
    (same,) = match(["b:0"], [boxes], [boxes.copy()], {"b:0"}, rows=2)
    np.testing.assert_array_equal(same, boxes)
    swapped = boxes[[2, 1, 0, 3, 4, 5]]
    (back,) = match(["b:0"], [boxes], [swapped], {"b:0"}, rows=2)
    np.testing.assert_array_equal(back, boxes)
    (other,) = match(["b:0"], [boxes], [swapped], set(), rows=2)  # not a detection output
    np.testing.assert_array_equal(other, swapped)


def test_unit_is_the_range_at_least_one():
    assert unit(np.array([0.1, 0.9])) == 1.0
    assert unit(np.array([[-2.0, 30.0], [np.inf, 5.0]])) == 32.0
    assert unit(np.array([b"cat", b"dog"], dtype=object)) == 1.0  # labels looked up by class


def test_outputs_an_nms_selects_are_read_from_the_graph():
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        boxes = tf.compat.v1.placeholder(tf.float32, [8, 4], name="boxes")
        scores = tf.compat.v1.placeholder(tf.float32, [8], name="scores")
        keep = tf.image.non_max_suppression(boxes, scores, 4, 0.5)
        tf.gather(boxes, keep, name="detection_boxes")
        tf.identity(tf.reduce_sum(scores), name="total")
    found = detection_outputs(graph.as_graph_def(), ["detection_boxes:0", "total:0"])
    assert found == {"detection_boxes:0"}
    assert detection_outputs(graph.as_graph_def(), ["total:0"]) == set()


def test_an_nms_inside_a_called_function_selects_too():
    import tensorflow as tf

    @tf.function
    def nms(boxes, scores):
        return tf.image.non_max_suppression(boxes, scores, 4, 0.5)

    @tf.function
    def model(boxes, scores):
        return tf.gather(boxes, nms(boxes, scores), name="picked"), tf.reduce_sum(scores, name="total")

    graph_def = model.get_concrete_function(
        tf.TensorSpec([8, 4]), tf.TensorSpec([8])).graph.as_graph_def()
    assert any(n.op in ("PartitionedCall", "StatefulPartitionedCall") for n in graph_def.node)
    assert detection_outputs(graph_def, ["picked:0", "total:0"]) == {"picked:0"}
