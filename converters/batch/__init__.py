"""Batch conversion for build pipelines: `freeze batch MANIFEST` and `graphfreeze.batch.run`.

manifest.py (jobs from models.toml), jobs.py (requests, prepare, shards), cache.py
(content-addressed entries), worker.py (one job, and its commit), executors/ (where jobs run:
local processes, Ray, plugins), results.py and report.py (what is reported), runner.py (all of
it in order).
"""

from __future__ import annotations

__all__ = ["run"]


def __getattr__(name: str):
    """`graphfreeze.batch.run`, imported on first use (the registry lists the executors in
    graphfreeze.batch.executors without loading the runner)."""
    if name == "run":
        from graphfreeze.batch.runner import run

        return run
    raise AttributeError(name)
