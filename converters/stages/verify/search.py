"""--quantize-until: quantize, rank the quantized layers by TensorFlow's QuantizationDebugger on
the verification data (worst first), keep the worst k in float and verify again, with k found by
doubling (1, 2, 4, ...) and then bisection, within `quantize_rounds` conversions. The smallest k
that passes wins; when none does, the error says the best reached and nothing is written.

Before keeping any layer in float, the artifact's other activation ranges are tried
(`range_choices`: TFLite's averaged ranges, which outliers widen less): a model whose int8 loss
comes from its ranges then passes with no float layer. The artifact provides the operations
(TFLite: `formats/tflite/int8.py`): `quantized_layers(samples, ranges)` and
`requantize(keep_float, ranges)`."""

from __future__ import annotations

import dataclasses

from graphfreeze.errors import InputError, VerificationError

DEBUG_ROWS = 32  # the debugger ranks on the first rows of the data: per-layer means settle


def quantize_until(state, options, ref, first: dict, check) -> tuple:
    """(artifact, report) of the smallest float set that passes `check(artifact) -> report`:
    first the artifact's other activation ranges, then layers kept in float on the better."""
    artifact = state.artifact
    rounds = options.quantize_rounds
    tried: dict[tuple, tuple] = {}  # (ranges, k) -> (artifact, report)
    steps = []

    def note(ranges: str, k: int, candidate, report: dict) -> bool:
        tried[ranges, k] = (candidate, report)
        steps.append(_step(k, candidate, report, ranges))
        return report["passed"]

    quantizer = artifact.quantizer
    ranges = quantizer.range_choices[0] if quantizer.range_choices else None
    note(ranges, 0, artifact, first)
    for other in quantizer.range_choices[1:]:  # e.g. averaged ranges: no layer lost to float
        if rounds:
            rounds -= 1
            try:
                candidate = quantizer.requantize((), other)
            except InputError:  # ranges this model cannot have: the layer search still can
                continue
            if note(other, 0, candidate, check(candidate)):
                return _chosen(artifact, tried, steps, [], other, 0)
    ranges = min((key for key in tried), key=lambda key: _score(tried[key][1]))[0]
    names = [i.name for i in artifact.inputs]
    samples = [[ref.feeds[n][k:k + 1] for n in names] for k in range(min(DEBUG_ROWS, ref.rows))]
    ranked = list(quantizer.layers(samples, ranges))

    def attempt(k: int) -> bool:
        candidate = quantizer.requantize(tuple(ranked[:k]), ranges)
        return note(ranges, k, candidate, check(candidate))

    fails, passes, k = 0, None, 1
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
        best = min(tried, key=lambda key: _score(tried[key][1]))
        raise VerificationError(
            f"{artifact.path}: --quantize-until {state_goal(options)} not met after "
            f"{len(steps) - 1} conversion(s): the best reached keeps {best[1]} of {len(ranked)} "
            f"layers in float{_with(best[0])} and {tried[best][1]['failure']}; nothing "
            "written. Loosen it, or raise --quantize-rounds")
    return _chosen(artifact, tried, steps, ranked, ranges, passes)


def _chosen(artifact, tried: dict, steps: list, ranked: list, ranges, passes: int) -> tuple:
    """The passing candidate (re-quantized if the staged file holds a later attempt), its
    report with the search, and the lines the terminal shows."""
    chosen, report = tried[ranges, passes]
    last = steps[-1]
    if (last["kept"], last.get("ranges")) != (passes, ranges):
        chosen = artifact.quantizer.requantize(tuple(ranked[:passes]), ranges)
    search = {"kept_float": ranked[:passes], "steps": steps}
    if ranked:
        search["layers"] = len(ranked)
    if ranges is not None:
        search["calibration_ranges"] = ranges
    report = {**report, "quantize_until": search}
    shown = [name.split(";")[0] for name in ranked[:passes]]
    of = f" of {len(ranked)}" if ranked else ""
    lines = [f"quantize-until: {passes}{of} layers kept in float{_with(ranges)}"
             f"{' (' + ', '.join(shown[:3]) + (', ...' if passes > 3 else '') + ')' if passes else ''}",
             *("  " + _shown(s) for s in steps)]
    if ranked and passes == len(ranked):
        lines.append("  met only with every layer in float: nothing is quantized, so the tflite "
                     "target gives a smaller file; loosen the goal or calibrate on more data")
    return dataclasses.replace(chosen, summary=(*chosen.summary, *lines)), report


def _with(ranges) -> str:
    return f", {ranges} ranges" if ranges else ""


def met_at_once(artifact, report: dict) -> tuple:
    """The goal met with every layer quantized: said so, no search."""
    report = {**report, "quantize_until": {"kept_float": [], "steps": [_step(0, artifact, report)]}}
    line = "quantize-until: met with every layer quantized"
    return dataclasses.replace(artifact, summary=(*artifact.summary, line)), report


def state_goal(options) -> str:
    drop = options.accuracy_drop()
    return f"{drop:.2%} top-1 drop" if drop is not None else \
        f"mean |diff| {options.mean_tolerance:g}"


def _step(k: int, artifact, report: dict, ranges=None) -> dict:
    step = {"kept": k, "bytes": artifact.size, "passed": report["passed"],
            **({"ranges": ranges} if ranges else {}),
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
    ranges = f" ({step['ranges']} ranges)" if "ranges" in step else ""
    return (f"{step['kept']:>3} float{ranges}: {size}, {what}, "
            f"{'passes' if step['passed'] else 'fails'}")
