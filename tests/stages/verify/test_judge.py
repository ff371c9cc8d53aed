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
    float: the float targets' max |diff| gives way to the int8 targets' rule (rmse as a share of
    the range, top-1); a target judged so already, or on a mean tolerance given, keeps it."""
    from graphfreeze.stages.verify.stage import INT8_THRESHOLDS

    qat = Artifact(path="m.tflite", sha256="", size=0, format=None, inputs=(), outputs=(),
                   facts={"quantization": "qat (ranges learned in training)"})
    plain = Artifact(path="m.tflite", sha256="", size=0, format=None, inputs=(), outputs=())
    judged = verify.learned_quantization(qat, VerifyOptions(target_tolerance=1e-4))
    assert judged.tolerance_for("y:0") == (float("inf"), 0.0)
    assert judged.rmse_range_for("y:0") == INT8_THRESHOLDS["target_rmse_range"]
    assert verify.learned_quantization(plain, VerifyOptions(tolerance=1e-4)).tolerance == 1e-4
    own = VerifyOptions(target_tolerance=float("inf"), target_rmse_range=0.01, min_top1=0.8)
    assert verify.learned_quantization(qat, own) == own


def test_the_int8_targets_judge_alike_by_one_rule():
    """edge-int8, onnx-int8 and tflite-dynamic (and a QAT artifact) share one verify setting:
    no absolute tolerance, the rmse as a share of the range, top-1 agreement."""
    from graphfreeze.registry import Registry
    from graphfreeze.stages.verify.stage import INT8_THRESHOLDS

    registry = Registry.default(plugins=False)
    settings = [next(u.options for u in registry.target(t).stages if u.use == "verify")
                for t in ("edge-int8", "onnx-int8", "tflite-dynamic")]
    assert settings[0] == settings[1] == settings[2]
    assert {k: settings[0].get(k, 0.0) for k in INT8_THRESHOLDS} == INT8_THRESHOLDS


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
    assert "for 0% of the 1 rows whose top class leads by more than twice the error allowed" \
        in failure(flipped, VerifyOptions(tolerance=float("inf"), mean_tolerance=0.5,
                                          min_top1=0.8))
    assert compare(expected[2:], got[2:], tie=0.1)["top1_agreement"] == 1.0  # no decisive row


def test_quantized_targets_judge_the_rmse_as_a_share_of_the_output_range():
    """The same int8-sized error passes outputs of ~25 and fails probabilities; a softmax's
    range is [0, 1] however undecided the original is; --tolerance replaces the rule."""
    from graphfreeze.stages.verify import judge
    from graphfreeze.tensors import TensorInfo

    rng = np.random.default_rng(0)
    options = VerifyOptions(target_tolerance=float("inf"), target_rmse_range=0.02, min_top1=0.8)
    info = TensorInfo("y:0", "float32", (None, 1))
    big = rng.uniform(10, 40, (32, 1)).astype(np.float32)
    noisy = big + rng.normal(0, 0.2, big.shape).astype(np.float32)  # mean |diff| 0.16
    m = judge.output_metrics(info, big, noisy, options)
    assert m["range"] == pytest.approx(big.max()) and m["mean_abs_diff"] > 0.05
    assert judge.failure(m, options, "y:0") is None
    given = VerifyOptions(**{**options.__dict__, "tolerance": 0.1})  # absolute, as documented
    assert "differs by up to" in judge.failure(m, given, "y:0")
    probs = np.full((32, 12), 1 / 12, np.float32)  # undecided: values span 0..1/12 only
    off = probs + rng.normal(0, 0.03, probs.shape).astype(np.float32)
    m = judge.output_metrics(TensorInfo("p:0", "float32", (None, 12)), probs, off, options,
                             [0.0, 1.0])
    assert m["range"] == 1.0
    why = judge.failure(m, options, "p:0")
    assert why.startswith("has an rmse of 0.03") and "of its range 1 (allowed 2.0%)" in why
    ids = np.arange(10)
    m = judge.output_metrics(TensorInfo("c:0", "int64", (None,)), ids, np.where(ids < 4, 0, ids),
                             options)  # class ids: 3 of 10 differ
    assert judge.failure(m, options, "c:0") == "agrees in 70% of its values (needs 80%)"
    assert judge.value_range(np.array([9.9, 10.1])) == pytest.approx(10.1)  # 0 in the range
    assert judge.value_range(np.array([[-3.0, 1.0]])) == 4.0
    assert judge.value_range(np.zeros(3)) == 1.0
