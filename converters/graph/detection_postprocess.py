"""A NumPy reference of TFLite's `TFLite_Detection_PostProcess` custom op (LiteRT's
`kernels/detection_postprocess.cc`): center-size box decoding against the anchors, then fast
(per-anchor best classes, one NMS) or regular (NMS per class, merged by score) non-max
suppression. Model Garden's `nms_version="tflite"` detectors carry the op as a composite
function whose body is a stand-in returning zeros; this is what verification compares the
converted model's op with, on the model's own box, score and anchor tensors."""

from __future__ import annotations

import numpy as np

DETECTIONS_PER_CLASS = 100  # the kernel's default for `detections_per_class`


def run(attrs: dict, boxes, scores, anchors) -> list:
    """[boxes (B, D, 4), classes (B, D), scores (B, D), num_detections (B,)] as float32, each
    batch row as the kernel computes its one row (D = max_detections * max_classes)."""
    rows = [_one(attrs, np.asarray(b, np.float32), np.asarray(s, np.float32),
                 np.asarray(anchors, np.float32)) for b, s in zip(boxes, scores, strict=True)]
    return [np.stack([r[i] for r in rows]).astype(np.float32) for i in range(3)] + \
        [np.array([r[3] for r in rows], np.float32)]


def shapes(attrs: dict) -> list[tuple]:
    """The shapes `run` returns (batch unknown): what the kernel's outputs are."""
    size = int(attrs["max_detections"]) * int(attrs.get("max_classes_per_detection", 1))
    return [(None, size, 4), (None, size), (None, size), (None,)]


def _one(attrs: dict, encodings, scores, anchors):
    max_det = int(attrs["max_detections"])
    per_anchor = int(attrs.get("max_classes_per_detection", 1))
    num_classes = int(attrs["num_classes"])
    offset = scores.shape[-1] - num_classes  # 1 with a background column
    decoded = _decode(encodings, anchors, [float(attrs.get(k, 1.0)) for k in
                                           ("y_scale", "x_scale", "h_scale", "w_scale")])
    size = max_det * per_anchor
    out_boxes = np.zeros((size, 4), np.float32)
    out_classes = np.zeros(size, np.float32)
    out_scores = np.zeros(size, np.float32)
    class_scores = scores[:, offset:offset + num_classes]
    if attrs.get("use_regular_nms", False):
        per_class = min(int(attrs.get("detections_per_class", DETECTIONS_PER_CLASS)), max_det)
        found: list[tuple[float, int, int]] = []  # (score, box, class), best first
        for col in range(num_classes):
            picked = _nms(decoded, class_scores[:, col], per_class, attrs)
            found = sorted(found + [(class_scores[i, col], i, col) for i in picked],
                           key=lambda item: -item[0])[:max_det]
        for slot, (score, box, col) in enumerate(found):
            out_boxes[slot], out_classes[slot], out_scores[slot] = decoded[box], col, score
        return out_boxes, out_classes, out_scores, len(found)
    k = min(per_anchor, num_classes)
    order = np.argsort(-class_scores, axis=1, kind="stable")[:, :k]
    best = class_scores[np.arange(len(class_scores)), order[:, 0]]
    picked = _nms(decoded, best, max_det, attrs)
    for slot, box in enumerate(picked):
        for col in range(k):
            at = per_anchor * slot + col
            out_boxes[at] = decoded[box]
            out_classes[at] = order[box, col]
            out_scores[at] = class_scores[box, order[box, col]]
    return out_boxes, out_classes, out_scores, len(picked)


def _decode(encodings, anchors, scale):
    """(ymin, xmin, ymax, xmax) from (y, x, h, w) encodings and (ycenter, xcenter, h, w)
    anchors, in double precision as the kernel does."""
    e, a = encodings.astype(np.float64), anchors.astype(np.float64)
    yc = e[:, 0] / scale[0] * a[:, 2] + a[:, 0]
    xc = e[:, 1] / scale[1] * a[:, 3] + a[:, 1]
    half_h = 0.5 * np.exp(e[:, 2] / scale[2]) * a[:, 2]
    half_w = 0.5 * np.exp(e[:, 3] / scale[3]) * a[:, 3]
    yc, xc = yc.astype(np.float32), xc.astype(np.float32)
    half_h, half_w = half_h.astype(np.float32), half_w.astype(np.float32)
    return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], axis=-1)


def _nms(boxes, scores, limit: int, attrs: dict) -> list[int]:
    """Greedy single-class NMS: scores >= the threshold, best first (stable), a box dropped
    when its IoU with a kept one is over the threshold."""
    keep = np.nonzero(scores >= np.float32(attrs.get("nms_score_threshold", 0.0)))[0]
    keep = keep[np.argsort(-scores[keep], kind="stable")]
    iou_limit = np.float32(attrs["nms_iou_threshold"])
    picked: list[int] = []
    active = np.ones(len(keep), bool)
    for i, box in enumerate(keep):
        if len(picked) >= min(len(keep), limit):
            break
        if not active[i]:
            continue
        picked.append(int(box))
        active[i] = False
        rest = np.nonzero(active)[0]
        if len(rest):
            active[rest[_iou(boxes[box], boxes[keep[rest]]) > iou_limit]] = False
    return picked


def _iou(box, others):
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    height = np.maximum(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0)
    width = np.maximum(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0)
    inter = (height * width).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area + areas - inter)
    return np.where((area <= 0) | (areas <= 0), np.float32(0), iou)
