"""Batch conversion for build pipelines: `freeze batch MANIFEST` and `graphfreeze.batch.run`.

manifest.py (jobs from models.toml), jobs.py (requests, prepare, shards), cache.py
(content-addressed entries), worker.py (one job, and its commit), local.py / ray_executor.py
(where jobs run), results.py and report.py (what is reported), run.py (all of it in order).
"""

from __future__ import annotations


def run(*args, **kwargs):
    """See graphfreeze.batch.run.run."""
    from graphfreeze.batch.run import run as run_batch

    return run_batch(*args, **kwargs)
