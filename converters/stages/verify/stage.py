"""verify: run the original and the artifact on the same inputs and judge the outputs."""

from __future__ import annotations

import dataclasses
import math

from graphfreeze.errors import ConfigError, InputError, RunError, VerificationError
from graphfreeze.graph.composites import detection_outputs
from graphfreeze.stages.verify import judge
from graphfreeze.stages.verify.detections import match, unit
from graphfreeze.stages.verify.diverge import first_rows, lines, locate, measure
from graphfreeze.stages.verify.options import VerifyOptions
from graphfreeze.stages.verify.reference import (
    Reference,
    artifact_outputs,
    chunked,
    shared,
    started_inputs,
)
from graphfreeze.stages.verify.search import met_at_once, quantize_until, state_goal


def _as_detections(options, unit: float):
    """A detection output's judgement: its mean error per unit of its range. Not its rmse: a
    detection NMS picked otherwise is a whole box apart, an outlier rmse would refuse any such
    artifact for (the quantized rule's share of the range, doubled, on the mean, as before it)."""
    if options.target_rmse_range is not None:
        return dataclasses.replace(options, target_rmse_range=None,
                                   mean_tolerance=2 * options.target_rmse_range * unit)
    if options.mean_tolerance is not None:
        return dataclasses.replace(options, mean_tolerance=options.mean_tolerance * unit)
    return options


def verdict(artifact, ref: Reference, options: VerifyOptions, session=None,
            detections: frozenset = frozenset(), got: list | None = None,
            bounds: dict | None = None) -> dict:
    """The verification report of `artifact` on `ref` (passed or not, and why), run in
    `session` or its own (`got`: its outputs on ref.feeds, when already run); RunError when its
    runtime cannot run it. `detections`: the outputs a non-max suppression selects, compared as
    detections (stages/verify/detections.py); `bounds`: {output: [low, high]} of the outputs
    whose op has its own range (judge.bounded_outputs)."""
    bounds = bounds or {}
    if got is None:
        got = chunked((session or artifact.open()).run, ref.feeds, ref.run_rows)
    names = [t.name for t in artifact.outputs]
    if detections:
        got = match(names, ref.expected, got, detections, ref.rows)
    judged = {name: _as_detections(options, unit(e)) if name in detections else options
              for name, e in zip(names, ref.expected, strict=True)}
    metrics = {t.name: judge.output_metrics(t, e, g, judged[t.name], bounds.get(t.name))
               for t, e, g in zip(artifact.outputs, ref.expected, got, strict=True)}
    failures = {name: judge.failure(m, judged[name], name) for name, m in metrics.items()}
    report = {**options.judged(), "seed": options.seed, "data": ref.where,
              "batch_size": ref.rows,
              "max_abs_diff": {k: m["max_abs_diff"] for k, m in metrics.items()},
              "metrics": metrics}
    if detections:  # matched per row; a mean tolerance per unit of their range
        report["detections"] = sorted(detections)
    if bounds:  # said, so that `freeze verify` judges the golden outputs on the same ranges
        report["bounds"] = bounds
    for name in ("mean_tolerance", "min_top1"):
        if getattr(options, name):
            report[name] = getattr(options, name)
    if options.target_rmse_range is not None:
        report["rmse_range"] = options.target_rmse_range
    if options.check_stat != "max":
        report["check_stat"] = options.check_stat
    if ref.labels is not None:
        report["accuracy"] = judge.accuracy(artifact.outputs, ref.expected, got, ref.labels,
                                            ref.classes)
    why = next(((f"output '{k}' {v}") for k, v in failures.items() if v), None) or \
        judge.accuracy_failure(report.get("accuracy"), options)
    report["passed"] = why is None
    if why:
        report["failure"] = why
    return report


def run(state, options: VerifyOptions):
    try:
        return _run(state, options)
    except RunError as err:
        raise VerificationError(f"{state.artifact.path}: {err}, so it cannot be verified; "
                                "nothing written (pass --no-verify to write it unverified)"
                                ) from err


def _run(state, options: VerifyOptions):
    artifact = state.artifact
    # --quantize-until is the goal of artifacts that can keep layers in float (edge-int8); the
    # other targets of the run verify as they always do
    goal = options.quantize_target() if options.quantize_until is not None and \
        artifact.quantizer is not None else None
    options = computed_in_float16(state.notes, learned_quantization(artifact, goal or options))
    unknown = sorted(options.named_outputs() - {n for t in artifact.outputs
                                                for n in (t.name, t.name.rsplit(":", 1)[0])})
    if unknown:
        raise ConfigError(f"--tolerance/--rtol name output(s) {', '.join(unknown)}, which the "
                          f"model does not have (outputs: "
                          f"{', '.join(t.name for t in artifact.outputs)})")
    names = [t.name for t in artifact.outputs]
    detections = frozenset(detection_outputs(state.graph_def, names))
    bounds = judge.bounded_outputs(state.graph_def, names)
    calibrated = artifact.facts.get("calibration")
    if detections and calibrated not in (None, "synthetic") and not options.verify_data and \
            not options.golden:  # a detector says nothing on random inputs: its images, then
        options = dataclasses.replace(options, verify_data=calibrated)
    got = _run_early(state, options, artifact)
    ref = shared(state, options, artifact.inputs)
    if goal is not None and ref.labels is None and goal.accuracy_drop() is not None:
        raise InputError(f"--quantize-until {state_goal(goal)} is a top-1 accuracy drop, which "
                         "needs labelled data: --verify-data with a `labels` array or class "
                         "sub-folders; or give a mean |diff| such as --quantize-until 0.01")
    judge.original_is_finite(artifact.outputs, ref.expected, ref.where, *(
        ["give data the original computes finite outputs on, or pass --no-verify"]
        if options.verify_data or options.golden else []))
    _save_golden(state, options, ref)
    report = verdict(artifact, ref, options, detections=detections, got=got, bounds=bounds)
    if goal is not None:
        artifact, report = quantize_until(
            state, options, ref, report,
            lambda a: verdict(a, ref, options, detections=detections, bounds=bounds)) \
            if not report["passed"] else met_at_once(artifact, report)
    if options.explain or not report["passed"]:
        feeds = first_rows(ref.feeds, artifact.inputs)
        located = dataclasses.replace(state, artifact=artifact)
        measured = measure(located, feeds, *_threshold(options))
        report["divergence"] = locate(located, feeds, *_threshold(options), measured=measured)
        if options.explain and report["passed"]:  # the same, drawn for Model Explorer
            from graphfreeze.explain import overlay

            artifact = overlay.write(located, measured)
    if not report["passed"]:
        err = VerificationError(
            f"{artifact.path}: {report['failure']} against the original on {ref.where}; "
            "nothing written. Check --outputs/--inputs, or pass --tolerance X or --no-verify")
        # where it diverges, and what the artifact says of itself (e.g. its worst quantized layers)
        err.details = [*lines(report["divergence"]), *artifact.summary]
        err.divergence = report["divergence"]
        raise err
    artifact = dataclasses.replace(artifact, facts={**artifact.facts, "verification": report})
    return dataclasses.replace(state, artifact=artifact)


def _run_early(state, options: VerifyOptions, artifact) -> list | None:
    """The artifact's outputs on the reference's inputs, run while the original still runs on
    them; None when they are not known yet or the artifact fails (run again after the original,
    so the original's own failure is said first)."""
    started = started_inputs(state, options)
    if started is None:
        return None
    try:
        return artifact_outputs(state, artifact, *started)
    except Exception:  # noqa: BLE001 -- said when run again, after the original's own failure
        return None


def _save_golden(state, options: VerifyOptions, ref: Reference) -> None:
    """--save-golden DIR: the inputs and the original's outputs, at commit: those of the target
    that verified on the most rows (each target has its own seeded inputs; not the order's)."""
    rows = ref.rows if ref.feeds else 0  # a scalar input is one row
    saved = state.memo.get("golden_saved")
    if not options.save_golden or saved and saved[0] == options.save_golden and saved[1] >= rows:
        return
    from graphfreeze.data import golden

    golden.save(state.files, options.save_golden, ref.feeds, state.artifact.inputs,
                state.artifact.outputs, ref.expected, ref.labels, state.model.graph_file)
    state.memo["golden_saved"] = (options.save_golden, rows)


# the int8 targets' judgement (edge-int8.toml, onnx-int8.toml, tflite-dynamic.toml say the same)
INT8_THRESHOLDS = {"target_tolerance": float("inf"), "target_rtol": 0.0,
                   "target_rmse_range": 0.025, "min_top1": 0.8}


def learned_quantization(artifact, options: VerifyOptions) -> VerifyOptions:
    """An artifact quantized with the ranges a QAT model learned (facts["quantization"]) runs
    integer arithmetic where the original simulates it in float: judged as the int8 targets
    are, unless the target is judged so already (or on a mean tolerance given)."""
    if not str(artifact.facts.get("quantization", "")).startswith("qat") or \
            options.target_rmse_range is not None or options.mean_tolerance is not None:
        return options
    return dataclasses.replace(options, **INT8_THRESHOLDS)


FLOAT16_THRESHOLDS = {"target_tolerance": 1e-2, "target_rtol": 1e-2}  # tflite-fp16.toml's


def computed_in_float16(notes: dict, options: VerifyOptions) -> VerifyOptions:
    """A model trained in mixed precision computes in float16, its artifact in float32 (the
    float32_compute pass, `notes` of the run or of the artifact's sidecar): they differ by
    float16's rounding, judged as tflite-fp16 is (the target's own where it allows more)."""
    if not notes.get("float16_compute_widened"):
        return options
    return dataclasses.replace(options, **{k: max(getattr(options, k), v)
                                           for k, v in FLOAT16_THRESHOLDS.items()})


def _threshold(options: VerifyOptions) -> tuple[float, str]:
    """What an intermediate tensor may differ by: the output tolerance on max |diff|, or for
    targets judged on averages (quantized), the mean tolerance (or the rmse share of the range,
    measure() scaling it by each tensor's magnitude) on mean |diff|."""
    atol = options.tolerance_for("")[0]
    if math.isfinite(atol) and options.check_stat == "max":
        return atol, "max_abs_diff"
    return options.mean_tolerance or options.rmse_range_for("") or \
        (atol if math.isfinite(atol) else 1e-2), "mean_abs_diff"
