"""benchmark (`--benchmark`): the artifact's latency in its own runtime, as an app would run it.

The artifact's runtime session (`Format.open` with the thread count asked for) binds one
inference at batch 1 on seeded inputs (`tensors.sample_inputs`, `Session.bind`); this stage
warms it up, times `runs` calls with `time.perf_counter` and records the median and p90 in the
sidecar as `latency` = {median_ms, p90_ms, runs, warmup, threads, cpu, runtime}. A runtime
that cannot time the artifact is a warning, not a failed conversion: the artifact is verified.
Without `--benchmark` the stage does nothing."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.errors import first_line
from graphfreeze.options import OptionValueError, option
from graphfreeze.plugins import Stage

SEED = 0


@dataclass(frozen=True)
class BenchmarkOptions:
    benchmark: bool = option(
        False, flag="--benchmark",
        help="Time each artifact in its own runtime (LiteRT, onnxruntime, TensorFlow, OpenVINO) "
             "at batch 1: median and p90 latency in the sidecar and the table.")
    benchmark_runs: int = option(50, flag="--benchmark-runs", metavar="N",
                                 help="--benchmark: timed runs per artifact (default 50).")
    benchmark_warmup: int = option(5, flag="--benchmark-warmup", metavar="N",
                                   help="--benchmark: untimed runs first (default 5).")
    benchmark_threads: int = option(1, flag="--benchmark-threads", metavar="N",
                                    help="--benchmark: CPU threads the runtime may use "
                                         "(default 1).")

    def __post_init__(self):
        if self.benchmark_runs < 1:
            raise OptionValueError("benchmark_runs", self.benchmark_runs, "give at least 1")
        if self.benchmark_warmup < 0:
            raise OptionValueError("benchmark_warmup", self.benchmark_warmup, "give 0 or more")
        if self.benchmark_threads < 1:
            raise OptionValueError("benchmark_threads", self.benchmark_threads,
                                   "give at least 1")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else platform.processor(), else "unknown"."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def measure(call, runs: int, warmup: int) -> dict:
    """Warm `call` up, then time `runs` calls: median and p90 in milliseconds."""
    import time

    for _ in range(warmup):
        call()
    times = []
    clock = time.perf_counter
    for _ in range(runs):
        start = clock()
        call()
        times.append((clock() - start) * 1e3)
    import numpy as np

    median, p90 = (float(x) for x in np.percentile(times, [50, 90]))
    return {"median_ms": round(median, 4), "p90_ms": round(p90, 4), "runs": runs, "warmup": warmup}


def latency(artifact, options: BenchmarkOptions) -> dict:
    """The `latency` record of `artifact` (its runtime's own error escapes)."""
    from graphfreeze.tensors import sample_inputs

    feeds = sample_inputs(artifact.inputs, 1, SEED, artifact.path)
    session = artifact.open(threads=options.benchmark_threads)
    timed = measure(session.bind(feeds), options.benchmark_runs, options.benchmark_warmup)
    return {**timed, "threads": session.threads, "cpu": cpu_model(), "runtime": session.label}


def run(state, options: BenchmarkOptions):
    if not options.benchmark:
        return state
    artifact = state.artifact
    try:
        record = latency(artifact, options)
    except Exception as err:  # noqa: BLE001 -- a measurement, not the artifact: warn
        why = f"its runtime cannot time it ({first_line(err)})"
    else:
        artifact = dataclasses.replace(artifact, facts={**artifact.facts, "latency": record})
        return dataclasses.replace(state, artifact=artifact)
    warnings = [*state.notes.get("warnings", []), f"{state.target}: no latency measured: {why}"]
    return dataclasses.replace(state, notes=state.noted(warnings=warnings))


def unmeasured(options: BenchmarkOptions) -> bool:
    """Without --benchmark the stage does nothing: no TensorFlow."""
    return not options.benchmark


STAGE = Stage("benchmark", run, "artifact", "artifact", BenchmarkOptions,
              "--benchmark: median/p90 latency at batch 1 in the artifact's own runtime",
              floor=unmeasured, weights_apart=True,  # (the artifact's runtime only)
              source_graph=False)
