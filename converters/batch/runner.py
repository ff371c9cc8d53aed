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

from graphfreeze import storage
from graphfreeze.batch import jobs as joblib
from graphfreeze.batch.cache import Cache, Outcome, default_dir, job_key
from graphfreeze.batch.executors.base import ExecutorOptions
from graphfreeze.batch.manifest import parse_manifest, specs_from_paths
from graphfreeze.batch.results import (
    CACHED,
    FAILED,
    NOT_RUN,
    OK,
    UNSUCCESSFUL,
    JobOutcome,
    JobResult,
    Report,
)
from graphfreeze.batch.worker import commit, shippable
from graphfreeze.errors import GraphFreezeError


def run(manifest: str | None = None, paths: list[str] | None = None, options: dict | None = None,
        *, jobs: int | None = None, cache: str | None = "default", shard: str | None = None,
        timeout: float | None = None, fail_fast: bool = False, executor: str = "local",
        address: str | None = None, recycle_after: int = 8, registry=None,
        on_result: Callable[[JobResult], None] = lambda result: None) -> Report:
    """Convert every job of `manifest` (or of `paths` with shared `options`, keyed as in a
    manifest's [defaults]). `cache`: a folder, "default" (~/.cache/graphfreeze) or None."""
    from graphfreeze.registry import Registry

    start = time.monotonic()
    registry = registry or Registry.default()
    chosen_executor = registry.executor(executor)  # an unknown name: said before any work
    specs = parse_manifest(manifest, registry) if manifest else \
        specs_from_paths(paths or [], options or {}, registry)
    chosen = joblib.parse_shard(shard) if shard else None
    mine = [s for s in specs if chosen is None or joblib.in_shard(s.name, chosen)]
    from graphfreeze.quiet import native_stderr_off

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

    def done(name: str, result: JobOutcome, attempts: int) -> None:
        job = by_name[name]
        if not result.ok:
            finish(JobResult(job.name, job.spec.source, job.request.targets, result.status,
                             result.seconds, error=result.error, exit_code=result.exit_code,
                             attempts=attempts, details=result.details))
            return
        finished = _committed(job, result.files, OK, result.seconds, attempts)
        if finished.status == OK and store:
            store.store(keys[name], result.files)
        finish(finished)

    interrupted, tasks, cwd = False, [], os.getcwd()
    for job in todo:  # the driver's plan is what runs: its registry and plugins included
        try:
            tasks.append((job.name, (shippable(job.prepared), cwd)))
        except GraphFreezeError as err:
            done(job.name, JobOutcome(FAILED, error=str(err), exit_code=err.exit_code), 0)
    if tasks:
        runner = chosen_executor.create(ExecutorOptions(
            jobs, timeout, recycle_after, fail_fast, address))
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
    return Report(ordered, time.monotonic() - start, shard=shard,
                  skipped=len(specs) - len(mine), interrupted=interrupted,
                  extra={"out_dir": out_dirs[0] if out_dirs else "dist"})


def remove_stale(job) -> list[str]:
    """Remove from a failed job's folder the artifacts an earlier run left: the files this job
    writes, and every artifact a graphfreeze sidecar there describes (a target since dropped),
    with its sidecar. Returns what was removed."""
    import json

    from graphfreeze.temporaries import remove

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
                     attempts=attempts)
