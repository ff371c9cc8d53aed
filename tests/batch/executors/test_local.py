"""The local executor's memory budget: a waiting job starts only while its estimate fits beside
the running jobs' (the first that fits, so a small job is not held behind a large one); a job
alone always starts."""

from __future__ import annotations

from collections import deque

from graphfreeze.batch.executors.local import LocalExecutor, _Worker


def _running(*keys: str) -> list[_Worker]:
    return [_Worker(process=None, conn=None, task=(key, (), 1)) for key in keys]


def test_the_first_waiting_job_that_fits_beside_the_running_ones_starts():
    executor = LocalExecutor(jobs=3, max_memory=10, estimates={"a": 6, "b": 5, "c": 4})
    pending = deque([("b", (), 1), ("c", (), 1)])
    assert executor._fitting(pending, _running("a")) == 1  # b waits, c fits beside a
    assert executor._fitting(pending, _running("a", "c")) is None
    assert executor._fitting(pending, []) == 0


def test_a_job_alone_starts_even_over_the_budget_and_none_waits_without_one():
    assert LocalExecutor(jobs=2, max_memory=1, estimates={"a": 6})._fitting(
        deque([("a", (), 1)]), []) == 0
    assert LocalExecutor(jobs=2)._fitting(deque([("b", (), 1)]), _running("a")) == 0
