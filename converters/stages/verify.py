"""verify: run the original and the artifact on the same seeded inputs and compare outputs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze import memory
from graphfreeze.diverge import lines, locate, reference_run
from graphfreeze.errors import ConfigError, VerificationError
from graphfreeze.metrics import compare
from graphfreeze.options import OptionValueError, option
from graphfreeze.plugins import Stage
from graphfreeze.tensors import io_infos, sample_inputs


@dataclass(frozen=True)
class VerifyOptions:
    tolerance: float = option(1e-5, flag="--tolerance", metavar="X",  # per output
                              help="Max abs difference allowed by verification (default: the "
                                   "target's).")
    mean_tolerance: float | None = None  # mean abs difference allowed (quantized targets)
    min_top1: float | None = None  # share of rows whose arg-max agrees (classifier outputs;
    # with a mean tolerance, rows the original decides by less than twice it are ties)
    batch_size: int = 2
    seed: int = 0
    explain: bool = option(False, flag="--explain",
                           help="Also locate where each artifact diverges from the original "
                                "(always done when verification fails).")

    def __post_init__(self):  # checked with the plan, before any model is loaded
        import math

        for name in ("tolerance", "mean_tolerance", "min_top1"):
            value = getattr(self, name)
            if value is not None and (math.isnan(value) or value < 0):
                raise OptionValueError(name, value, "give a number >= 0 (inf allows any "
                                       "difference)")
        if self.batch_size < 1:
            raise OptionValueError("batch_size", self.batch_size, "give at least 1")


def reference_outputs(state, feeds: dict) -> list:
    """The original's outputs: checkpoint restored, flags at inference values, no dropout."""
    graph_def, flag_feeds = reference_run(state)
    return state.model.run_reference(graph_def, {**feeds, **flag_feeds},
                                     [t.name for t in state.outputs])


def failure(metrics: dict, options: VerifyOptions) -> str | None:
    """Why `metrics` fail the options' thresholds, or None."""
    if metrics["max_abs_diff"] > options.tolerance:
        return f"differs by up to {metrics['max_abs_diff']:.3g} (tolerance {options.tolerance:g})"
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


def _reference_key(options: VerifyOptions) -> tuple:
    return ("reference", options.seed, options.batch_size)


def prepare(state, options: VerifyOptions) -> None:
    """Start the reference run in a thread while the export stage works (it mostly waits in
    TensorFlow's C++ with the GIL released); `run` collects it."""
    from concurrent.futures import ThreadPoolExecutor

    key = _reference_key(options)
    if key in state.memo:
        return
    feeds = sample_inputs(io_infos(state)[0], options.batch_size, options.seed,
                          state.model.graph_file)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reference")
    state.memo[key] = (feeds, executor.submit(reference_outputs, state, feeds))
    executor.shutdown(wait=False)


def shared_reference(state, options: VerifyOptions, infos) -> tuple[dict, list]:
    """(feeds, the original's outputs on them), computed once per run for all targets: by
    `prepare`'s thread if it started one, else here."""
    from concurrent.futures import Future

    key = _reference_key(options)
    memo = state.memo
    if key not in memo:
        feeds = sample_inputs(infos, options.batch_size, options.seed, state.model.graph_file)
        done = Future()
        done.set_result(reference_outputs(state, feeds))
        memo[key] = (feeds, done)
        memory.release()  # the reference session's buffers, before the candidate's are made
    feeds, expected = memo[key]
    return feeds, expected.result()


def run(state, options: VerifyOptions):
    artifact = state.artifact
    if artifact.run is None:
        raise ConfigError(f"target '{state.target}': its export stage gives no way to run the "
                          "artifact, so it cannot be verified; pass --no-verify")
    options = learned_quantization(artifact, options)
    feeds, expected = shared_reference(state, options, artifact.inputs)
    got = artifact.run(feeds)
    tie = 2 * options.mean_tolerance if options.mean_tolerance is not None else 0.0
    metrics = {t.name: compare(e, g, tie) for t, e, g in zip(artifact.outputs, expected, got,
                                                             strict=True)}
    failures = {name: failure(m, options) for name, m in metrics.items()}
    report = {"tolerance": options.tolerance, "seed": options.seed,
              "batch_size": _batch(feeds, options.batch_size),
              "max_abs_diff": {k: m["max_abs_diff"] for k, m in metrics.items()},
              "metrics": metrics, "passed": not any(failures.values())}
    if options.mean_tolerance is not None:
        report["mean_tolerance"] = options.mean_tolerance
    if options.min_top1 is not None:
        report["min_top1"] = options.min_top1
    if options.explain or not report["passed"]:
        report["divergence"] = locate(state, feeds, *_threshold(options))
    if not report["passed"]:
        name, why = next((k, v) for k, v in failures.items() if v)
        err = VerificationError(
            f"{artifact.path}: output '{name}' {why} against the original; nothing written. "
            "Check --outputs/--inputs, or pass --tolerance X or --no-verify")
        # where it diverges, and what the artifact says of itself (e.g. its worst quantized layers)
        err.details = [*lines(report["divergence"]), *artifact.summary]
        err.divergence = report["divergence"]
        raise err
    artifact = dataclasses.replace(artifact, facts={**artifact.facts, "verification": report})
    return dataclasses.replace(state, artifact=artifact)


QAT_THRESHOLDS = {"tolerance": float("inf"), "mean_tolerance": 0.05}


def learned_quantization(artifact, options: VerifyOptions) -> VerifyOptions:
    """An artifact quantized with the ranges a QAT model learned (facts["quantization"]) runs
    integer arithmetic where the original simulates it in float: judged as quantized targets
    are (edge-int8's mean tolerance), unless the target already sets one."""
    if not str(artifact.facts.get("quantization", "")).startswith("qat") or \
            options.mean_tolerance is not None:
        return options
    return dataclasses.replace(options, **QAT_THRESHOLDS)


def _threshold(options: VerifyOptions) -> tuple[float, str]:
    """What an intermediate tensor may differ by: the output tolerance on max |diff|, or for
    targets judged on averages (quantized), the mean tolerance on mean |diff|."""
    import math

    if math.isfinite(options.tolerance):
        return options.tolerance, "max_abs_diff"
    return options.mean_tolerance or 1e-2, "mean_abs_diff"


def _batch(feeds: dict, default: int) -> int:
    """The batch the comparison ran on (a fixed input shape may differ from the option)."""
    first = next(iter(feeds.values()), None)
    return int(first.shape[0]) if first is not None and first.ndim else default


STAGE = Stage("verify", run, "artifact", "artifact", VerifyOptions,
              "run original and artifact on seeded inputs; fail over tolerance", prepare=prepare)
