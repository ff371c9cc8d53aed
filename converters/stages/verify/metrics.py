"""How far a converted model's tensor is from the original's: the metrics every target reports."""

from __future__ import annotations


def compare(expected, got, tie: float = 0.0) -> dict:
    """max and mean |diff|, RMSE and cosine similarity, and top-1 agreement for
    [batch, classes] outputs, over the rows whose top class leads the runner-up by more than
    `tie` in the original (a class it barely prefers may flip within the allowed error; no
    such row: 1.0, `top1_rows` 0). Shapes that differ give infinite differences."""
    import numpy as np

    if expected.shape != got.shape:
        return {"max_abs_diff": float("inf"), "mean_abs_diff": float("inf"),
                "rmse": float("inf"), "cosine": 0.0,
                "shape": [list(expected.shape), list(got.shape)]}
    if expected.dtype.kind in "fc":
        a, b = expected.astype(np.float64), got.astype(np.float64)
        same_nan = np.isnan(a) & np.isnan(b)
        diff = np.where(same_nan, 0, np.abs(a - b))
        a, b = np.where(same_nan, 0, a), np.where(same_nan, 0, b)
    elif expected.dtype.kind in "OSU":  # strings: 1 where they differ
        diff = (expected != got).astype(np.float64)
        a, b = np.ones_like(diff), 1.0 - diff
    else:
        a, b = expected.astype(np.float64), got.astype(np.float64)
        diff = (expected != got).astype(np.float64)
    result = {"max_abs_diff": float(diff.max()) if diff.size else 0.0,
              "mean_abs_diff": float(diff.mean()) if diff.size else 0.0,
              "rmse": float(np.sqrt(np.mean(diff ** 2))) if diff.size else 0.0,
              "cosine": cosine(a, b)}
    if expected.ndim >= 2 and expected.shape[-1] > 1 and expected.dtype.kind in "fiu":
        agree = np.argmax(expected, axis=-1) == np.argmax(got, axis=-1)
        top2 = np.sort(expected.astype(np.float64), axis=-1)[..., -2:]
        decisive = (top2[..., 1] - top2[..., 0]) > tie
        result["top1_agreement"] = float(agree[decisive].mean()) if decisive.any() else 1.0
        if tie:
            result["top1_rows"] = int(decisive.sum())
    return result


def cosine(a, b) -> float:
    """Cosine similarity of two arrays taken as flat vectors (1.0 when both are all zero)."""
    import numpy as np

    a, b = np.ravel(a), np.ravel(b)
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norms == 0.0:
        return 1.0 if not a.any() and not b.any() else 0.0
    return float(np.clip(np.dot(a, b) / norms, -1.0, 1.0))
