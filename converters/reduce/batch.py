"""`freeze batch --reduce`: each job that failed converting or verifying (exit 3 or 5) reduced
per target until one reproduces, its repro written into the job's folder and named in the job's
`details.reduced` (the reports link it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from graphfreeze.errors import GraphFreezeError

REDUCIBLE = (3, 5)  # bad input (a converter's refusal) and verification: not crashes or hangs


def reduce_failed(report, jobs: dict, timeout: float | None = None,
                  log: Callable[[str], None] = lambda line: None):
    """`report` with details.reduced on each failed job whose failure reduces."""
    from graphfreeze.batch.results import FAILED
    from graphfreeze.io import storage
    from graphfreeze.process.quiet import native_stderr_off
    from graphfreeze.reduce.run import reduce

    results = []
    for result in report.jobs:
        job = jobs.get(result.name)
        if job is None or result.status != FAILED or result.exit_code not in REDUCIBLE:
            results.append(result)
            continue
        reduced, tried = None, []
        for target in result.targets:
            request = dataclasses.replace(job.request, targets=(target,), force=True)
            log(f"{result.name}: reducing its {target} failure")
            try:
                with native_stderr_off():  # the trials' and the stock converter's chatter
                    done = reduce(request, job.folder + "/", tries=1, timeout=timeout,
                                  force=True)
            except GraphFreezeError as err:
                tried.append(f"{target}: {err}")
                continue
            reduced = {"target": target, "failure": done.failure, "command": done.command,
                       "nodes": list(done.nodes), "trials": done.trials,
                       "seconds": round(done.seconds, 1),
                       "stock_fails_the_same_way": bool(done.stock.get("same")),
                       "files": {k: storage.basename(v) for k, v in done.files.items()},
                       "folder": job.folder}
            break
        details = {**(result.details or {}),
                   "reduced": reduced or {"none": "; ".join(tried)[:500]}}
        results.append(dataclasses.replace(result, details=details))
    return dataclasses.replace(report, jobs=tuple(results))


def line(result) -> str | None:
    """The terminal line under a failed job: where its repro is."""
    from graphfreeze.io import storage

    reduced = (result.details or {}).get("reduced") or {}
    if "files" not in reduced:
        return None
    before, after = reduced["nodes"]
    alike = "fails the same way" if reduced["stock_fails_the_same_way"] else \
        "does not fail alike"
    return (f"  reduced ({reduced['target']}): {before} -> {after} nodes, "
            f"{storage.join(reduced['folder'], reduced['files']['script'])} (stock converter "
            f"{alike})")
