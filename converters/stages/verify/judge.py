"""How the artifact's outputs are judged against the original's: per-output absolute and
relative tolerances on a chosen statistic, NaN/Inf, quantized targets' rmse as a share of each
output's range and top-1 agreement, and top-1 accuracy against labels."""

from __future__ import annotations

from graphfreeze.errors import InputError, VerificationError
from graphfreeze.stages.verify.metrics import compare
from graphfreeze.stages.verify.options import VerifyOptions, quantile

# ops whose output has a range of its own, whatever the inputs (int8 kernels fix their scale)
BOUNDED_OPS = {"Softmax": (0.0, 1.0), "Sigmoid": (0.0, 1.0), "Tanh": (-1.0, 1.0)}
SAME_VALUES = {"Identity", "IdentityN", "StopGradient", "Snapshot", "Reshape", "Squeeze",
               "ExpandDims"}


def bounded_outputs(graph_def, names) -> dict[str, list[float]]:
    """{output: [low, high]} for the outputs (of `names`) a Softmax, Sigmoid or Tanh computes,
    through ops that keep its values (Identity, Reshape, ...)."""
    from graphfreeze.graph.graphdefs import node_of, nodes_by_name

    nodes = nodes_by_name(graph_def)
    found = {}
    for name in names:
        node = nodes.get(node_of(name))
        while node is not None and node.op in SAME_VALUES and node.input:
            node = nodes.get(node_of(node.input[0]))
        if node is not None and node.op in BOUNDED_OPS:
            found[name] = list(BOUNDED_OPS[node.op])
    return found


def value_range(expected, bounds=None) -> float:
    """The span an int8 tensor holding `expected` covers: its min..max with 0 in it (TFLite and
    onnxruntime put 0 in every range), widened to `bounds` (its op's own range); 1 when empty."""
    import numpy as np

    values = np.asarray(expected, dtype=np.float64)
    values = values[np.isfinite(values)]
    low, high = (min(0.0, float(values.min())), max(0.0, float(values.max()))) if values.size \
        else (0.0, 0.0)
    if bounds:
        low, high = min(low, bounds[0]), max(high, bounds[1])
    return (high - low) or 1.0


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
    share = options.rmse_range_for(output)
    if share is not None and "rmse/range" in metrics and metrics["rmse/range"] > share:
        return (f"has an rmse of {metrics['rmse']:.3g}, {metrics['rmse/range']:.1%} of its range "
                f"{metrics['range']:.3g} (allowed {share:.1%})")
    if share is not None and "rmse/range" not in metrics and options.min_top1 is not None and \
            metrics["mean_abs_diff"] > 1 - options.min_top1:  # ids, strings: equal or not
        return (f"agrees in {1 - metrics['mean_abs_diff']:.0%} of its values (needs "
                f"{options.min_top1:.0%})")
    if options.mean_tolerance is not None and metrics["mean_abs_diff"] > options.mean_tolerance:
        return (f"differs by {metrics['mean_abs_diff']:.3g} on average (mean tolerance "
                f"{options.mean_tolerance:g})")
    top1 = metrics.get("top1_agreement")
    if options.min_top1 is not None and top1 is not None and top1 < options.min_top1:
        rows = "rows" if "top1_rows" not in metrics else \
            f"the {metrics['top1_rows']} rows whose top class leads by more than twice the " \
            "error allowed"
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


def tie(options: VerifyOptions, span: float) -> float:
    """How far the original's top class must lead for top-1 agreement to count the row: twice
    the error the target allows (a class it barely prefers may flip within it), whatever
    --tolerance says."""
    share = options.target_rmse_range
    if share is not None:
        return 2 * share * span
    return 2 * options.mean_tolerance if options.mean_tolerance is not None else 0.0


def output_metrics(info, expected, got, options: VerifyOptions, bounds=None) -> dict:
    """compare()'s metrics plus the judged error statistic, the rmse as a share of the output's
    range (float outputs) and the count of new NaN/Inf."""
    import numpy as np

    span = value_range(expected, bounds) if expected.dtype.kind == "f" else None
    metrics = compare(expected, got, tie(options, span or 1.0))
    if span is not None:
        metrics.update({"range": span, "rmse/range": metrics["rmse"] / span})
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
