"""`graphfreeze.batch.run`: a manifest (or paths) in, a Report out.

Every job is prepared first (all checked, no TensorFlow); cache hits are committed straight from
the cache (no TensorFlow, no stage run); the rest go to an executor (local worker processes or
Ray), and each finished job is committed and cached as it arrives. Ctrl-C stops the workers;
finished jobs are kept and a re-run resumes from the cache.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

from graphfreeze.batch import baseline as baselib
from graphfreeze.batch import budgets, memory, shards
from graphfreeze.batch import jobs as joblib
from graphfreeze.batch.cache import Cache, Outcome, default_dir, job_key
from graphfreeze.batch.executors.base import ExecutorOptions
from graphfreeze.batch.manifest import parse_manifest, specs_from_paths
from graphfreeze.batch.memory import source_bytes
from graphfreeze.batch.results import (
    CACHED,
    FAILED,
    NOT_RUN,
    OK,
    OVER_BUDGET,
    UNSUCCESSFUL,
    JobOutcome,
    JobResult,
    Report,
)
from graphfreeze.batch.worker import commit, shippable
from graphfreeze.errors import EXIT_OVER_BUDGET, ConfigError, GraphFreezeError
from graphfreeze.io import storage


def run(manifest: str | None = None, paths: list[str] | None = None, options: dict | None = None,
        *, jobs: int | None = None, cache: str | None = "default", shard: str | None = None,
        timeout: float | None = None, fail_fast: bool = False, executor: str = "local",
        address: str | None = None, resources: dict[str, float] | None = None,
        recycle_after: int = 8, registry=None,
        baseline: str | None = None, fail_on: tuple[str, ...] = (),
        stage_options: dict | None = None, reduce: bool = False, max_memory: int | None = None,
        on_result: Callable[[JobResult], None] = lambda result: None) -> Report:
    """Convert every job of `manifest` (or of `paths` with shared `options`, keyed as in a
    manifest's [defaults]). `cache`: a folder, "default" (~/.cache/graphfreeze) or None.
    `baseline`: an earlier report.json to compare with (default: the manifest's); `fail_on`:
    budget rules (with the manifest's) a job breaks against it: status over-budget.
    `stage_options`: stage options for every job, over the manifest's (`--benchmark`).
    `address`, `resources`: where Ray runs the jobs (see ExecutorOptions). `reduce`: each
    failed job's failure reduced (reduce/batch.py), its repro in the job's folder.
    `max_memory`: the bytes the jobs running at once may take, by their estimates
    (batch/memory.py; default, local: what the machine has available); a job over it alone is
    refused before any work."""
    from graphfreeze.registry import Registry

    start = time.monotonic()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    registry = registry or Registry.default()
    chosen_executor = registry.executor(executor)  # an unknown name: said before any work
    rules = budgets.parse_all(list(fail_on))
    specs = parse_manifest(manifest, registry) if manifest else \
        specs_from_paths(paths or [], options or {}, registry)
    if stage_options:
        specs = [dataclasses.replace(s, options=dataclasses.replace(
            s.options, stage_options={**(s.options.stage_options or {}), **stage_options}))
                 for s in specs]
    budget = {s.name: rules + budgets.parse_all(list(s.options.fail_on), f"{s.where}: fail_on")
              for s in specs}
    baseline = baseline or _manifest_baseline(specs)
    base = baselib.load(baseline) if baseline else None
    base_jobs = baselib.index(base) if base else {}
    chosen = shards.parse_shard(shard) if shard else None
    mine = [s for s in specs if chosen is None or shards.in_shard(s.name, chosen)]
    from graphfreeze.process.quiet import native_stderr_off

    with native_stderr_off():  # an option check may import TensorFlow (--opset: tf2onnx's range)
        prepared = joblib.prepare_jobs(mine, registry)
    store = Cache(default_dir() if cache == "default" else cache) if cache else None
    results: dict[str, JobResult] = {}

    def finish(result: JobResult) -> None:
        if result.status in UNSUCCESSFUL:  # a CI upload of out_dir must not ship an earlier run's
            removed = remove_stale(by_job[result.name])
            if removed:
                result = dataclasses.replace(result, details={**(result.details or {}),
                                                              "removed_stale": removed})
        if base is not None and result.status in (OK, CACHED) and budget[result.name]:
            result = _over_budget(result, budget[result.name], base_jobs)
        results[result.name] = result
        on_result(result)

    by_job = {job.name: job for job in prepared}
    keys, todo = {}, []
    for job in prepared:
        began = time.monotonic()
        key = job_key(job) if store else None
        keys[job.name] = key
        hit = store.load(key) if store else None
        if hit is not None:
            finish(_committed(job, hit, CACHED, time.monotonic() - began, 1))
        else:
            todo.append(job)
    by_name = {job.name: job for job in todo}
    estimates = {job.name: memory.estimate(job.prepared) for job in todo}
    budget_bytes = max_memory or (memory.available() if chosen_executor.name == "local" else
                                  None)  # (Ray's nodes say what they have: its `memory`)
    if budget_bytes:
        memory.check(estimates, budget_bytes, {j.name: j.spec.where for j in todo},
                     max_memory is not None)

    def done(name: str, result: JobOutcome, attempts: int) -> None:
        job = by_name[name]
        measured = {"memory_estimate": estimates[name], "peak_memory": result.peak_memory,
                    "began": result.began}
        if not result.ok:  # a dead worker's job: the time until it was given up
            seconds = result.seconds or time.monotonic() - dispatched
            finish(JobResult(job.name, job.spec.source, job.request.targets, result.status,
                             seconds, error=result.error, exit_code=result.exit_code,
                             attempts=attempts, details=result.details, **measured))
            return
        finished = dataclasses.replace(_committed(job, result.files, OK, result.seconds,
                                                  attempts), **measured)
        if finished.status == OK and store:
            store.store(keys[name], result.files, job=name, seconds=result.seconds)
        finish(finished)

    interrupted, tasks, cwd, dispatched = False, [], os.getcwd(), time.monotonic()
    for job in todo:  # the driver's plan is what runs: its registry and plugins included
        try:
            tasks.append((job.name, (shippable(job.prepared), cwd)))
        except GraphFreezeError as err:
            done(job.name, JobOutcome(FAILED, error=str(err), exit_code=err.exit_code), 0)
    if tasks:
        runner = chosen_executor.create(ExecutorOptions(
            jobs, timeout, recycle_after, fail_fast, address, tuple((resources or {}).items()),
            budget_bytes, estimates))
        try:
            runner.run(tasks, done)
        except KeyboardInterrupt:
            interrupted = True
    why = "interrupted" if interrupted else "--fail-fast stopped the batch at an earlier failure"
    for job in prepared:  # jobs never run are reported, not dropped
        if job.name not in results:
            finish(JobResult(job.name, job.spec.source, job.request.targets, NOT_RUN, 0.0,
                             error=f"not run: {why}", exit_code=0, attempts=0))
    ordered = tuple(results[s.name] for s in mine if s.name in results)
    out_dirs = sorted({s.options.out_dir for s in specs})
    report = Report(ordered, time.monotonic() - start, shard=shard,
                    skipped=len(specs) - len(mine), interrupted=interrupted,
                    extra={"out_dir": out_dirs[0] if out_dirs else "dist"},
                    run=run_facts(started, manifest, any(budget.values()), base is not None))
    if reduce and not interrupted:
        from graphfreeze.reduce.batch import reduce_failed

        report = reduce_failed(report, by_job, timeout)
    if base is not None:
        report = dataclasses.replace(report, baseline=baselib.compare(report.as_json(), base,
                                                                      baseline))
    return report


def _manifest_baseline(specs) -> str | None:
    """The manifest's `baseline` (one per run: in [defaults])."""
    given = sorted({s.options.baseline for s in specs if s.options.baseline})
    if len(given) > 1:
        raise ConfigError(f"{specs[0].where}: models name different baselines ({', '.join(given)}"
                          "); set one baseline in [defaults]")
    return given[0] if given else None


def _over_budget(result: JobResult, rules, base_jobs: dict) -> JobResult:
    """`result`, over-budget if it breaks one of `rules` against the baseline."""
    broken = budgets.check(rules, baselib.job_deltas(base_jobs, result.as_json()))
    if not broken:
        return result
    more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
    return dataclasses.replace(result, status=OVER_BUDGET, error=broken[0]["reason"] + more,
                               exit_code=EXIT_OVER_BUDGET,
                               details={**(result.details or {}), "budget": broken})


def run_facts(started: str, manifest: str | None, budgets_given: bool = False,
              compared: bool = False) -> dict:
    """The report's header: when, what, with which graphfreeze and TensorFlow (its version from
    the package metadata: the driver never imports TensorFlow)."""
    from importlib import metadata

    from graphfreeze import __version__

    facts = {"started": started, "manifest": manifest, "graphfreeze": __version__}
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly"):
        try:
            facts["tensorflow"] = metadata.version(dist)
            break
        except metadata.PackageNotFoundError:
            continue
    if budgets_given and not compared:
        facts["budgets"] = "not checked: no --baseline"
    return facts


def remove_stale(job) -> list[str]:
    """Remove from a failed job's folder the artifacts an earlier run left: the files this job
    writes, and every artifact a graphfreeze sidecar there describes (a target since dropped),
    with its sidecar. Returns what was removed."""
    import json

    from graphfreeze.io.temporaries import remove

    folder = job.folder
    if not storage.isdir(folder):
        return []
    names = {storage.basename(p) for p in [*job.prepared.paths.values(),
                                           *job.prepared.sidecars.values()]}
    for name in storage.listdir(folder):
        if name.endswith(".json"):
            try:
                car = json.loads(storage.read_bytes(storage.join(folder, name)))
            except (GraphFreezeError, ValueError):
                continue
            if isinstance(car, dict) and "graphfreeze_version" in car and \
                    car.get("file") == name[:-len(".json")]:
                names |= {name, car["file"]}
    removed = []
    for name in sorted(names):
        path = storage.join(folder, name)
        if storage.exists(path):
            remove(path)
            removed.append(path)
    if removed and not storage.is_remote(folder) and not os.listdir(folder):
        os.rmdir(folder)
    return removed


def _committed(job, outcome: Outcome, status: str, seconds: float, attempts: int) -> JobResult:
    try:
        records = commit(outcome, job.folder)
    except GraphFreezeError as err:
        return JobResult(job.name, job.spec.source, job.request.targets, FAILED, seconds,
                         error=str(err), exit_code=err.exit_code, attempts=attempts)
    return JobResult(job.name, job.spec.source, job.request.targets, status, seconds, records,
                     attempts=attempts, made_seconds=outcome.seconds if status == CACHED else None,
                     source_bytes=source_bytes(job.prepared))
