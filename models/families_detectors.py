"""Second zoo: detectors, each a TF2 SavedModel with a small conv backbone on a 32x32 image,
8x8 anchor grid (two anchors a cell), boxes decoded against the anchors, and one kind of
non-max suppression: TFLite's post-processing op as Model Garden's `nms_version="tflite"` writes
it (a `tf.function(experimental_implements="TFLite_Detection_PostProcess ...")` whose body is a
stand-in returning zeros), NonMaxSuppressionV3, V4 padded (`pad_to_max_output_size`), V5 (with
scores), CombinedNonMaxSuppression, and a batched NMS in a `tf.map_fn` (a `While`, as Model
Garden's `nms_version="v2"` runs one per image). Random weights, nothing downloaded."""

from __future__ import annotations

import os

IMAGE = [1, 32, 32, 3]
MAX_DETECTIONS = 10
CLASSES = 3
TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "onnx", "openvino"]
TFLITE_TARGETS = ["tflite", "tflite-fp16", "tflite-dynamic"]


def _implements(max_detections: int, num_classes: int, regular: bool = False) -> str:
    """Model Garden's `_generate_detections_tflite_implements_signature`."""
    attrs = [("max_detections", "i", max_detections), ("max_classes_per_detection", "i", 1),
             ("use_regular_nms", "b", str(regular).lower()), ("nms_score_threshold", "f", 0.0),
             ("nms_iou_threshold", "f", 0.5), ("y_scale", "f", 1.0), ("x_scale", "f", 1.0),
             ("h_scale", "f", 1.0), ("w_scale", "f", 1.0), ("num_classes", "i", num_classes)]
    return " ".join(['name: "TFLite_Detection_PostProcess"'] + [
        f'attr {{ key: "{k}" value {{ {t}: {v:f} }} }}' if t == "f" else
        f'attr {{ key: "{k}" value {{ {t}: {v} }} }}' for k, t, v in attrs])


def _module(tf, np, head):
    """A tf.Module whose `serve(image)` runs the backbone and `head(tf, raw boxes (B, N, 4),
    scores (B, N, CLASSES) after a sigmoid, anchors (N, 4) as corners)`."""

    class Detector(tf.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.stem = tf.Variable(rng.normal(0, 0.3, (3, 3, 3, 8)).astype(np.float32))
            self.box = tf.Variable(rng.normal(0, 0.3, (1, 1, 8, 2 * 4)).astype(np.float32))
            self.cls = tf.Variable(rng.normal(0, 0.5, (1, 1, 8, 2 * CLASSES)).astype(np.float32))
            cells = [(y, x) for y in range(8) for x in range(8)]
            self.anchors = tf.constant(np.array(
                [[(y + .5) * 4 - s / 2, (x + .5) * 4 - s / 2, (y + .5) * 4 + s / 2,
                  (x + .5) * 4 + s / 2] for y, x in cells for s in (4.0, 8.0)], np.float32))

        @tf.function(input_signature=[tf.TensorSpec(head.shape, tf.float32, name="image")])
        def serve(self, image):
            batch = tf.shape(image)[0]
            features = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(image, self.stem, 2, "SAME")),
                                        2, 2, "SAME")
            boxes = tf.reshape(tf.nn.conv2d(features, self.box, 1, "SAME"), [batch, -1, 4])
            scores = tf.sigmoid(tf.reshape(tf.nn.conv2d(features, self.cls, 1, "SAME"),
                                           [batch, -1, CLASSES]))
            return head(tf, boxes, scores, self.anchors)

    return Detector()


def _corners(tf, boxes, anchors):
    """Boxes (ymin, xmin, ymax, xmax) from center-size offsets against corner anchors."""
    yc = (anchors[:, 0] + anchors[:, 2]) / 2 + boxes[..., 0] * (anchors[:, 2] - anchors[:, 0])
    xc = (anchors[:, 1] + anchors[:, 3]) / 2 + boxes[..., 1] * (anchors[:, 3] - anchors[:, 1])
    h = tf.exp(boxes[..., 2]) * (anchors[:, 2] - anchors[:, 0])
    w = tf.exp(boxes[..., 3]) * (anchors[:, 3] - anchors[:, 1])
    return tf.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)


def _images(np, count: int = 16):
    """Calibration images with objects in them, as a user gives a detector's int8 targets: a
    few bright boxes on a dark, noisy background (seeded)."""
    rng = np.random.default_rng(1)
    images = rng.uniform(0.0, 0.2, (count, *IMAGE[1:])).astype(np.float32)
    for image in images:
        for _ in range(rng.integers(1, 4)):
            y, x = rng.integers(0, 24, 2)
            h, w = rng.integers(4, 9, 2)
            image[y:y + h, x:x + w] = rng.uniform(0.6, 1.0, 3)
    return images


def _save(out: str, head, targets, args=()) -> dict:
    """The SavedModel, and images.npz (images with objects) passed as --verify-data, which the
    int8 targets calibrate on too: a path relative to the model's folder, where the coverage run
    and the tests run freeze."""
    import numpy as np
    import tensorflow as tf

    module = _module(tf, np, head)
    tf.saved_model.save(module, os.path.join(out, "saved_model"),
                        signatures={"serving_default": module.serve})
    shape = [1 if d is None else d for d in head.shape]
    np.savez(os.path.join(out, "images.npz"), image=_images(np))
    args = ("--verify-data", "images.npz", *args)
    return {"path": "saved_model", "args": list(args), "targets": list(targets),
            "kind": "savedmodel",
            "peer": {"format": "saved_model", "inputs": [{"shape": shape, "dtype": "float32"}]}}


def _head(shape):
    def wrap(func):
        func.shape = shape
        return func
    return wrap


@_head(IMAGE)
def _tflite_head(tf, boxes, scores, anchors):
    """Model Garden's `_generate_detections_tflite`: anchors to center-size, then the stand-in
    composite TFLiteConverter replaces by TFLite_Detection_PostProcess."""
    yc, xc = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
    centers = tf.stack([yc, xc, anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]], -1)

    @tf.function(experimental_implements=_implements(MAX_DETECTIONS, CLASSES))
    def dummy_post_processing(input_boxes, input_scores, input_anchors):
        boxes = tf.constant(0.0, dtype=tf.float32, name="boxes")
        scores = tf.constant(0.0, dtype=tf.float32, name="scores")
        classes = tf.constant(0.0, dtype=tf.float32, name="classes")
        num_detections = tf.constant(0.0, dtype=tf.float32, name="num_detections")
        return boxes, classes, scores, num_detections

    num, det_scores, det_classes, det_boxes = dummy_post_processing(boxes, scores, centers)[::-1]
    return {"detection_boxes": det_boxes, "detection_classes": det_classes,
            "detection_scores": det_scores, "num_detections": num}


def detector_tflite_nms(out: str) -> dict:
    """Model Garden's RetinaNet export with nms_version="tflite", in small."""
    return _save(out, _tflite_head, TFLITE_TARGETS)


def _single(tf, boxes, scores, anchors):
    """One image's corner boxes (N, 4) and best-class scores (N,)."""
    return _corners(tf, boxes, anchors)[0], tf.reduce_max(scores, axis=-1)[0]


@_head(IMAGE)
def _v3_head(tf, boxes, scores, anchors):
    corners, best = _single(tf, boxes, scores, anchors)
    keep = tf.raw_ops.NonMaxSuppressionV3(boxes=corners, scores=best, max_output_size=MAX_DETECTIONS,
                                          iou_threshold=0.5, score_threshold=0.3)
    return {"detection_boxes": tf.gather(corners, keep), "detection_scores": tf.gather(best, keep)}


def detector_nms_v3(out: str) -> dict:
    """tf.image.non_max_suppression (NonMaxSuppressionV3): as many boxes as survive."""
    return _save(out, _v3_head, TARGETS)


@_head(IMAGE)
def _v4_head(tf, boxes, scores, anchors):
    corners, best = _single(tf, boxes, scores, anchors)
    keep, valid = tf.raw_ops.NonMaxSuppressionV4(
        boxes=corners, scores=best, max_output_size=MAX_DETECTIONS, iou_threshold=0.5,
        score_threshold=0.3, pad_to_max_output_size=True)
    return {"detection_boxes": tf.gather(corners, keep), "detection_scores": tf.gather(best, keep),
            "num_detections": valid}


def detector_nms_v4_padded(out: str) -> dict:
    """NonMaxSuppressionV4 with pad_to_max_output_size: a fixed count and the valid number."""
    return _save(out, _v4_head, TARGETS)


@_head(IMAGE)
def _v5_head(tf, boxes, scores, anchors):
    corners, best = _single(tf, boxes, scores, anchors)
    keep, kept_scores, valid = tf.raw_ops.NonMaxSuppressionV5(
        boxes=corners, scores=best, max_output_size=MAX_DETECTIONS, iou_threshold=0.5,
        score_threshold=0.3, soft_nms_sigma=0.0, pad_to_max_output_size=True)
    return {"detection_boxes": tf.gather(corners, keep), "detection_scores": kept_scores,
            "num_detections": valid}


def detector_nms_v5(out: str) -> dict:
    """tf.image.non_max_suppression_with_scores, padded (NonMaxSuppressionV5)."""
    return _save(out, _v5_head, TARGETS)


@_head([None, 32, 32, 3])
def _combined_head(tf, boxes, scores, anchors):
    corners = _corners(tf, boxes, anchors)[:, :, None, :]  # one box for every class
    nmsed = tf.image.combined_non_max_suppression(corners, scores, MAX_DETECTIONS, MAX_DETECTIONS,
                                                  iou_threshold=0.5, score_threshold=0.3)
    return {"detection_boxes": nmsed.nmsed_boxes, "detection_scores": nmsed.nmsed_scores,
            "detection_classes": nmsed.nmsed_classes, "num_detections": nmsed.valid_detections}


def detector_combined_nms(out: str) -> dict:
    """tf.image.combined_non_max_suppression (CombinedNonMaxSuppression), batched."""
    return _save(out, _combined_head, ["android", "server", "onnx"])  # TFLite, OpenVINO: no rule


@_head([None, 32, 32, 3])
def _batched_head(tf, boxes, scores, anchors):
    """Model Garden's nms_version="v2" in small: padded NMS per image in a map_fn (a While)."""
    corners = _corners(tf, boxes, anchors)

    def one(args):
        image_boxes, image_scores = args
        best = tf.reduce_max(image_scores, axis=-1)
        keep, valid = tf.image.non_max_suppression_padded(
            image_boxes, best, MAX_DETECTIONS, iou_threshold=0.5, score_threshold=0.3,
            pad_to_max_output_size=True)
        return tf.gather(image_boxes, keep), tf.gather(best, keep), valid

    det_boxes, det_scores, valid = tf.map_fn(
        one, (corners, scores), fn_output_signature=(tf.float32, tf.float32, tf.int32))
    return {"detection_boxes": det_boxes, "detection_scores": det_scores, "num_detections": valid}


def detector_batched_nms(out: str) -> dict:
    """A padded NMS per image in tf.map_fn: a While loop over the batch. OpenVINO converts it
    but its CPU plugin crashes running it (the peer's IR too): refused in one line."""
    return _save(out, _batched_head, [t for t in TARGETS if t != "openvino"])


def builders() -> dict:
    return {f.__name__: f for f in (detector_tflite_nms, detector_nms_v3, detector_nms_v4_padded,
                                    detector_nms_v5, detector_combined_nms, detector_batched_nms)}
