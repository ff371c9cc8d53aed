"""Verification metrics and the ways a comparison fails."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.stages import verify
from graphfreeze.stages.verify import VerifyOptions, failure
from graphfreeze.stages.verify.metrics import compare
from graphfreeze.state import Artifact


def test_metrics_and_each_threshold():
    expected = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], np.float32)
    got = np.array([[0.8, 0.2], [0.6, 0.4], [0.6, 0.4]], np.float32)
    m = compare(expected, got)
    assert m["max_abs_diff"] == pytest.approx(0.4)
    assert m["mean_abs_diff"] == pytest.approx((0.1 * 2 + 0.4 * 2) / 6)
    assert m["top1_agreement"] == pytest.approx(2 / 3)
    assert m["rmse"] == pytest.approx(np.sqrt((0.1 ** 2 * 2 + 0.4 ** 2 * 2) / 6))
    a, b = expected.ravel().astype(np.float64), got.ravel().astype(np.float64)
    assert m["cosine"] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert compare(expected, expected)["cosine"] == pytest.approx(1.0)
    assert "differs by up to 0.4" in failure(m, VerifyOptions(tolerance=0.1))
    loose = VerifyOptions(tolerance=1.0)
    assert failure(m, loose) is None
    assert "on average" in failure(m, VerifyOptions(tolerance=1.0, mean_tolerance=0.1))
    assert "top-1 class for 67% of rows (needs 80%)" in \
        failure(m, VerifyOptions(tolerance=1.0, min_top1=0.8))
    assert compare(expected, got[:2])["max_abs_diff"] == float("inf")  # shape mismatch


def test_an_artifact_quantized_with_learned_ranges_is_judged_as_quantized_targets_are():
    """A QAT model's int8 artifact computes in integers where the original simulates them in
    float: the float targets' max |diff| gives way to edge-int8's mean tolerance; a target that
    sets its own mean tolerance keeps it."""
    qat = Artifact(path="m.tflite", sha256="", size=0, format=None, inputs=(), outputs=(),
                   facts={"quantization": "qat (ranges learned in training)"})
    plain = Artifact(path="m.tflite", sha256="", size=0, format=None, inputs=(), outputs=())
    judged = verify.learned_quantization(qat, VerifyOptions(tolerance=1e-4))
    assert judged.tolerance == float("inf") and judged.mean_tolerance == 0.05
    assert verify.learned_quantization(plain, VerifyOptions(tolerance=1e-4)).tolerance == 1e-4
    own = VerifyOptions(tolerance=float("inf"), mean_tolerance=0.01, min_top1=0.8)
    assert verify.learned_quantization(qat, own) == own


def test_top1_counts_only_rows_the_original_decides_beyond_the_allowed_error():
    """A class the original prefers by less than twice the mean tolerance may flip within
    the error a quantized target is allowed: such rows are ties, not disagreements."""
    expected = np.array([[0.50, 0.49, 0.01], [0.9, 0.05, 0.05], [0.34, 0.33, 0.33]], np.float32)
    got = np.array([[0.48, 0.51, 0.01], [0.88, 0.06, 0.06], [0.32, 0.35, 0.33]], np.float32)
    assert compare(expected, got)["top1_agreement"] == pytest.approx(1 / 3)
    m = compare(expected, got, tie=0.1)
    assert m["top1_agreement"] == 1.0 and m["top1_rows"] == 1
    flipped = compare(expected, got[[1, 0, 2]], tie=0.1)
    assert flipped["top1_agreement"] == 0.0
    assert "for 0% of the 1 rows whose top class leads by more than twice the mean tolerance" \
        in failure(flipped, VerifyOptions(tolerance=float("inf"), mean_tolerance=0.5,
                                          min_top1=0.8))
    assert compare(expected[2:], got[2:], tie=0.1)["top1_agreement"] == 1.0  # no decisive row
