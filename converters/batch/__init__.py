"""Batch conversion for build pipelines: `freeze batch MANIFEST` and `graphfreeze.batch.run`.

manifest.py (jobs from models.toml), jobs.py (requests, prepare, shards), cache.py
(content-addressed entries), worker.py (one job, and its commit), local.py / ray_executor.py
(where jobs run), results.py and report.py (what is reported), runner.py (all of it in order).
"""

from __future__ import annotations

from graphfreeze.batch.runner import run

__all__ = ["run"]
