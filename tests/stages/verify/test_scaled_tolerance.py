"""Float targets' default tolerance scales with the output (target_tolerance + target_rtol ·
|original|): float32 rounding on outputs of ~10-1000 passes, a real mismatch does not, and an
explicit --tolerance/--rtol means what it says (absolute; rtol 0 unless given)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from graphfreeze.stages.verify.judge import failure, output_metrics
from graphfreeze.stages.verify.options import VerifyOptions
from graphfreeze.tensors import TensorInfo

TARGET = {"target_tolerance": 1e-5, "target_rtol": 1e-5}  # android's and server's


def test_large_outputs_pass_float_targets_by_default(zoo, freeze, tmp_path):
    path, args = zoo("large_outputs")  # outputs 20-500: one float32 ulp is 2e-6 to 3e-5
    result = freeze(path, *args, "--target", "android,server,tflite,onnx", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    checks = [json.loads(p.read_text())["verification"] for p in tmp_path.glob("*.json")]
    assert len(checks) == 4 and all(c["passed"] and c["rtol"] == c["tolerance"] for c in checks)
    assert max(d for c in checks for d in c["max_abs_diff"].values()) > 1e-5  # it did scale


def test_explicit_tolerance_stays_absolute(zoo, freeze, tmp_path):
    path, args = zoo("large_outputs")
    result = freeze(path, *args, "--target", "android", "--tolerance", "1e-5", "-o",
                    f"{tmp_path}/")
    assert result.exit_code == 5, result.output
    last = result.output.strip().splitlines()[-1]
    assert "differs by up to" in last and "(tolerance 1e-05)" in last, last
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("given,want", [
    ({}, (1e-5, 1e-5)),  # the target's
    ({"tolerance": 1e-3}, (1e-3, 0.0)),  # --tolerance alone: absolute, as always
    ({"rtol": 1e-2}, (1e-5, 1e-2)),  # --rtol alone: on the target's tolerance
    ({"tolerance": "probs=1e-3"}, (1e-3, 0.0)),  # per output: that output's is given
    ({"tolerance": 0.0, "rtol": 0.0}, (0.0, 0.0)),
])
def test_tolerance_for(given, want):
    assert VerifyOptions(**TARGET, **given).tolerance_for("probs:0") == want
    if given.get("tolerance") == "probs=1e-3":  # the other outputs keep the target's
        assert VerifyOptions(**TARGET, **given).tolerance_for("boxes:0") == (1e-5, 1e-5)


def test_scaled_default_still_catches_a_mismatch():
    rng = np.random.default_rng(0)
    expected = rng.uniform(10, 1000, (4, 10)).astype(np.float32)
    info = TensorInfo("probs:0", "float32", (None, 10))
    options = VerifyOptions(**TARGET)
    rounded = np.nextafter(expected, np.float32(np.inf))  # one ulp: up to 6e-5 at 1000
    assert failure(output_metrics(info, expected, rounded, options), options,
                   "probs:0") is None
    wrong = expected * np.float32(1.001)  # a real 0.1 % error
    why = failure(output_metrics(info, expected, wrong, options), options, "probs:0")
    assert why and "beyond rtol·|original|" in why and "(tolerance 1e-05 + 1e-05·|original|)" in why
