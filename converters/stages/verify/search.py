"""--quantize-until: quantize, rank the quantized layers by TensorFlow's QuantizationDebugger on
the verification data (worst first), keep the worst k in float and verify again, with k found by
doubling (1, 2, 4, ...) and then bisection, within `quantize_rounds` conversions. The smallest k
that passes wins; when none does, the error says the best reached and nothing is written.

The artifact provides the two operations (TFLite: `formats/tflite/selective.py`):
`quantized_layers(samples)` and `requantize(keep_float)`."""

from __future__ import annotations

import dataclasses

from graphfreeze.errors import VerificationError

DEBUG_ROWS = 32  # the debugger ranks on the first rows of the data: per-layer means settle


def quantize_until(state, options, ref, first: dict, check) -> tuple:
    """(artifact, report) of the smallest float set that passes `check(artifact) -> report`."""
    artifact = state.artifact
    names = [i.name for i in artifact.inputs]
    samples = [[ref.feeds[n][k:k + 1] for n in names] for k in range(min(DEBUG_ROWS, ref.rows))]
    ranked = list(artifact.quantized_layers(samples))
    tried = {0: (artifact, first)}
    steps = [_step(0, artifact, first)]

    def attempt(k: int) -> bool:
        candidate = artifact.requantize(tuple(ranked[:k]))
        report = check(candidate)
        tried[k] = (candidate, report)
        steps.append(_step(k, candidate, report))
        return report["passed"]

    rounds, fails, passes, k = options.quantize_rounds, 0, None, 1
    while rounds and passes is None and ranked:
        rounds -= 1
        if attempt(k):
            passes = k
        else:
            fails = k
            if k == len(ranked):
                break
            k = min(len(ranked), 2 * k)
    while rounds and passes is not None and passes - fails > 1:
        rounds -= 1
        mid = (fails + passes) // 2
        if attempt(mid):
            passes = mid
        else:
            fails = mid
    if passes is None:
        best = min(tried, key=lambda j: _score(tried[j][1]))
        raise VerificationError(
            f"{artifact.path}: --quantize-until {state_goal(options)} not met after "
            f"{len(steps) - 1} conversion(s): the best reached keeps {best} of {len(ranked)} "
            f"layers in float and {tried[best][1]['failure']}; nothing written. Loosen it, or "
            "raise --quantize-rounds")
    chosen, report = tried[passes]
    if steps[-1]["kept"] != passes:  # the staged file holds the last attempt: quantize it again
        chosen = artifact.requantize(tuple(ranked[:passes]))
    report = {**report, "quantize_until": {"layers": len(ranked), "kept_float": ranked[:passes],
                                           "steps": steps}}
    shown = [name.split(";")[0] for name in ranked[:passes]]
    lines = [f"quantize-until: {passes} of {len(ranked)} layers kept in float"
             f"{' (' + ', '.join(shown[:3]) + (', ...' if passes > 3 else '') + ')' if passes else ''}",
             *("  " + _shown(s) for s in steps)]
    if passes == len(ranked):
        lines.append("  met only with every layer in float: nothing is quantized, so the tflite "
                     "target gives a smaller file; loosen the goal or calibrate on more data")
    return dataclasses.replace(chosen, summary=(*chosen.summary, *lines)), report


def met_at_once(artifact, report: dict) -> tuple:
    """The goal met with every layer quantized: said so, no search."""
    report = {**report, "quantize_until": {"kept_float": [], "steps": [_step(0, artifact, report)]}}
    line = "quantize-until: met with every layer quantized"
    return dataclasses.replace(artifact, summary=(*artifact.summary, line)), report


def state_goal(options) -> str:
    drop = options.accuracy_drop()
    return f"{drop:.2%} top-1 drop" if drop is not None else \
        f"mean |diff| {options.mean_tolerance:g}"


def _step(k: int, artifact, report: dict) -> dict:
    step = {"kept": k, "bytes": artifact.size, "passed": report["passed"],
            "mean_abs_diff": max((m["mean_abs_diff"] for m in report["metrics"].values()),
                                 default=0.0)}
    if "accuracy" in report:
        step.update(top1=report["accuracy"]["artifact"], drop=report["accuracy"]["drop"])
    return step


def _score(report: dict) -> float:
    accuracy = report.get("accuracy")
    return accuracy["drop"] if accuracy else \
        max((m["mean_abs_diff"] for m in report["metrics"].values()), default=0.0)


def _shown(step: dict) -> str:
    size = f"{step['bytes'] / 1024:.1f} KB"
    what = f"mean |diff| {step['mean_abs_diff']:.3g}" + \
        (f", top-1 {step['top1']:.1%} (drop {step['drop']:.2%})" if "drop" in step else "")
    return f"{step['kept']:>3} float: {size}, {what}, {'passes' if step['passed'] else 'fails'}"
