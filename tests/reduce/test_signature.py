"""What "fails the same way" means (reduce/signature.py), on outcomes as the trials return them."""

from __future__ import annotations

from graphfreeze.batch.results import JobOutcome
from graphfreeze.reduce import signature

OPS = {"Conv2D", "Relu", "Erfinv", "Digamma", "Placeholder"}
NODES = {"conv1/Conv2D", "injected/Digamma", "injected/other", "x"}


def failed(error: str, code: int = 3, **details) -> JobOutcome:
    return JobOutcome("failed", error=error, exit_code=code, details=details or None)


def test_the_same_error_on_another_file_and_fewer_ops_matches():
    whole = signature.of(failed("model.ckpt: OpenVINO cannot convert op(s) Digamma, Erfinv (node "
                                "injected/Digamma (Digamma), injected/other (Erfinv)); use another "
                                "target"), OPS, NODES)
    part = signature.of(failed("/tmp/x/trial.pb: OpenVINO cannot convert op(s) Digamma (node "
                               "injected/Digamma (Digamma)); use another target"), OPS, NODES)
    assert whole.kind == signature.ERROR and whole.ops == {"Digamma", "Erfinv"}
    assert "injected/Digamma" in whole.nodes
    assert whole.matches(part) and not part.matches(whole)  # Erfinv is not part's


def test_another_error_another_kind_or_success_does_not_match():
    base = signature.of(failed("m: TFLite has no kernel for op(s) Erfinv, not even with "
                               "--allow-tf-ops"), OPS, NODES)
    other = signature.of(failed("m: the TFLite converter fails on the model at node 'x': "
                                "'tfl.conv_2d' op requires"), OPS, NODES)
    assert not base.matches(other)
    assert not base.matches(signature.of(JobOutcome("ok"), OPS, NODES))
    assert not base.matches(signature.of(failed("m: TFLite has no kernel for op(s) Erfinv, not "
                                                "even with --allow-tf-ops", code=5), OPS, NODES))
    hang = signature.of(JobOutcome.timed_out(5, 5), OPS, NODES)
    assert hang.kind == signature.TIMEOUT and not base.matches(hang)


def test_a_divergence_is_where_it_first_diverges():
    def diverged(node):
        return failed("m.tflite: output 'probs:0' max |diff| 0.5 > 1e-4 against the original on "
                      "seeded inputs", 5, divergence={"first": [{"node": node}]})

    first = signature.of(diverged("conv1/Conv2D"), OPS, NODES)
    assert first.kind == signature.DIVERGES and first.text == "conv1/Conv2D"
    assert first.matches(signature.of(diverged("conv1/Conv2D"), OPS, NODES))
    assert not first.matches(signature.of(diverged("injected/Digamma"), OPS, NODES))
    assert "first at node 'conv1/Conv2D'" in first.said()
