"""How the artifact's outputs are judged against the original's: per-output absolute and
relative tolerances on a chosen statistic, NaN/Inf, quantized targets' averages and top-1
agreement, and top-1 accuracy against labels."""

from __future__ import annotations

from graphfreeze.errors import InputError, VerificationError
from graphfreeze.stages.verify.metrics import compare
from graphfreeze.stages.verify.options import VerifyOptions, quantile


def error_stat(expected, got, rtol: float, stat: str) -> float:
    """The `stat` (max, mean, median, pNN) of each element's error beyond rtol * |original|."""
    import numpy as np

    if expected.shape != got.shape:
        return float("inf")
    if expected.dtype.kind in "OSU":  # strings: equal or not, whatever the statistic
        return float(np.any(expected != got))
    if expected.dtype.kind not in "fc":
        error = (expected != got).astype(np.float64)
    else:
        a, b = expected.astype(np.float64), got.astype(np.float64)
        error = np.maximum(np.abs(a - b) - rtol * np.abs(a), 0.0)
        error = np.where(np.isnan(a) & np.isnan(b), 0.0, error)
    if not error.size:
        return 0.0
    q = quantile(stat)
    if q is not None:
        return float(np.percentile(error, q))
    return float({"max": np.max, "mean": np.mean, "median": np.median}[stat](error))


def failure(metrics: dict, options: VerifyOptions, output: str = "") -> str | None:
    """Why `metrics` (of output `output`) fail the options' thresholds, or None."""
    if metrics.get("nonfinite"):
        return (f"is NaN or infinite in {metrics['nonfinite']} value(s) where the original is "
                "finite")
    atol, rtol = options.tolerance_for(output)
    error = metrics.get("error", metrics["max_abs_diff"])
    if error > atol:
        what = "differs by up to" if options.check_stat == "max" and not rtol else \
            f"has a {options.check_stat} error{' beyond rtol·|original|' if rtol else ''} of"
        scaled = f" + {rtol:g}·|original|" if rtol else ""
        return f"{what} {error:.3g} (tolerance {atol:g}{scaled})"
    if options.mean_tolerance is not None and metrics["mean_abs_diff"] > options.mean_tolerance:
        return (f"differs by {metrics['mean_abs_diff']:.3g} on average (mean tolerance "
                f"{options.mean_tolerance:g})")
    top1 = metrics.get("top1_agreement")
    if options.min_top1 is not None and top1 is not None and top1 < options.min_top1:
        rows = "rows" if "top1_rows" not in metrics else \
            f"the {metrics['top1_rows']} rows whose top class leads by more than twice the mean " \
            "tolerance"
        return f"agrees on the top-1 class for {top1:.0%} of {rows} (needs {options.min_top1:.0%})"
    return None


def original_is_finite(outputs, expected: list, where: str,
                       fix: str = "verify on real inputs with --verify-data, or pass "
                                  "--no-verify") -> None:
    """The original's outputs must be finite: otherwise no comparison means anything."""
    import numpy as np

    for info, value in zip(outputs, expected, strict=True):
        if value.dtype.kind in "fc" and not np.isfinite(value).all():
            bad = int((~np.isfinite(value)).sum())
            raise VerificationError(
                f"the original itself produces NaN or Inf in output '{info.name}' ({bad} "
                f"value(s)) on {where}; {fix}")


def output_metrics(info, expected, got, options: VerifyOptions, tie: float) -> dict:
    """compare()'s metrics plus the judged error statistic and the count of new NaN/Inf."""
    import numpy as np

    metrics = compare(expected, got, tie)
    atol, rtol = options.tolerance_for(info.name)
    metrics["error"] = error_stat(expected, got, rtol, options.check_stat)
    if got.dtype.kind in "fc" and expected.shape == got.shape:
        bad = int((~np.isfinite(got) & np.isfinite(expected)).sum())
        if bad:
            metrics["nonfinite"] = bad
    return metrics


def classifier(outputs, labels, classes=None) -> int:
    """The index of the output labels are for: the one [batch, C] float output (the first whose C
    covers the labels when there are several); labels beyond C name the mismatch."""
    candidates = [k for k, o in enumerate(outputs) if o.shape is not None and len(o.shape) == 2
                  and o.dtype.startswith("float") and (o.shape[1] or 2) > 1]
    if not candidates:
        raise InputError("the data has labels, but no output is [batch, classes] scores to take "
                         "the top-1 class of; drop the labels or name that output in --outputs")
    top = int(labels.max()) if len(labels) else 0
    for k in candidates:
        count = outputs[k].shape[1]
        if classes is not None and count is not None and len(classes) != count:
            continue
        if count is None or top < count:
            return k
    info = outputs[candidates[0]]
    if classes is not None:
        raise InputError(f"the data's {len(classes)} class folders ({', '.join(classes[:3])}, ...) "
                         f"do not match output '{info.name}' with {info.shape[1]} classes; give "
                         "one sub-folder per class the model outputs")
    raise InputError(f"the data's labels go up to {top}, but output '{info.name}' has "
                     f"{info.shape[1]} classes; check the labels")


def accuracy(outputs, expected: list, got: list, labels, classes=None) -> dict:
    """Top-1 accuracy of the original and the artifact on the labels, and the drop."""
    import numpy as np

    k = classifier(outputs, labels, classes)
    original = float((np.argmax(expected[k], axis=-1) == labels).mean())
    artifact = float((np.argmax(got[k], axis=-1) == labels).mean())
    return {"output": outputs[k].name, "rows": int(len(labels)), "original": original,
            "artifact": artifact, "drop": original - artifact}


def accuracy_failure(result: dict | None, options: VerifyOptions) -> str | None:
    allowed = options.accuracy_drop()
    if allowed is None:
        return None
    if result is None:
        raise InputError("--max-accuracy-drop needs labelled data: a `labels` array in the "
                         "--verify-data .npz, images in one sub-folder per class, or (freeze "
                         "verify) a --golden folder saved from such data")
    if result["drop"] > allowed + 1e-12:
        return (f"top-1 accuracy {result['artifact']:.1%} against the original's "
                f"{result['original']:.1%} (drop {result['drop']:.2%}, allowed {allowed:.2%})")
    return None
