"""A detector's outputs (those a non-max suppression selects) compared as detections: NMS ranks
near-tied scores either way, so each row's detections in the artifact are matched to the
original's before the comparison; and quantized targets judge them per unit of their range
(boxes are coordinates in the image's units, not probabilities)."""

from __future__ import annotations


def _per_row(value, rows: int):
    """`value` as (rows, detections, features), or None when it has no detection axis."""
    if value.ndim == 0 or rows < 1:
        return None
    if value.shape[0] == rows and value.ndim >= 2:  # batched: (rows, K, ...)
        return value.reshape(rows, value.shape[1], -1)
    if value.shape[0] % rows == 0 and value.shape[0] // rows > 1:  # one image a run, concatenated
        return value.reshape(rows, value.shape[0] // rows, -1)
    return None


def _greedy(a, b):
    """For each detection of `a` in order, the nearest (L1) detection of `b` not yet taken."""
    import numpy as np

    cost = np.nan_to_num(np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2), nan=1e300,
                         posinf=1e300)
    taken = np.zeros(len(b), bool)
    order = np.empty(len(a), int)
    for i in range(len(a)):
        j = int(np.argmin(np.where(taken, np.inf, cost[i])))
        order[i], taken[j] = j, True
    return order


def match(names: list[str], expected: list, got: list, detections: set[str], rows: int) -> list:
    """`got` with each row's detections put in the order of the original's: the outputs with
    the same number of detections a row are matched together (boxes, scores, classes)."""
    import numpy as np

    groups: dict[int, list[int]] = {}
    for k, (name, e, g) in enumerate(zip(names, expected, got, strict=True)):
        view = _per_row(e, rows) if name in detections and e.shape == g.shape and \
            e.dtype.kind in "fiu" else None
        if view is not None:
            groups.setdefault(view.shape[1], []).append(k)
    got = list(got)
    for members in groups.values():
        a, b = (np.concatenate([_per_row(values[k], rows).astype(np.float64) for k in members],
                               axis=2) for values in (expected, got))
        order = np.stack([_greedy(a[r], b[r]) for r in range(rows)])[:, :, None]
        for k in members:
            got[k] = np.take_along_axis(_per_row(got[k], rows), order, axis=1).reshape(
                got[k].shape)
    return got


def unit(expected) -> float:
    """A detection output's unit: its range on these inputs, at least 1."""
    import numpy as np

    if np.asarray(expected).dtype.kind not in "fiu":  # class names looked up, say
        return 1.0
    values = np.asarray(expected, dtype=np.float64)
    values = values[np.isfinite(values)]
    return max(1.0, float(np.ptp(values))) if values.size else 1.0
