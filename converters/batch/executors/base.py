"""What an executor is: it runs batch jobs somewhere and reports each one's JobOutcome.

Built-ins are `local` (worker processes) and `ray` (Ray tasks); a plugin adds one through the
entry-point group `graphfreeze.executors` (a class like these), chosen with `--executor NAME`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from graphfreeze.batch.results import JobOutcome


@dataclass(frozen=True)
class ExecutorOptions:
    """The batch options every executor is made from (each uses those it has a meaning for)."""

    jobs: int | None = None  # parallel jobs (default: the executor's own)
    timeout: float | None = None  # seconds per job
    recycle_after: int = 8  # jobs per worker process before a fresh one
    fail_fast: bool = False  # start no job after one failed
    address: str | None = None  # a cluster to join (ray; default: RAY_ADDRESS, else a local Ray)
    # custom resources each job takes (ray): jobs go to the nodes that have them
    resources: tuple[tuple[str, float], ...] = ()  # e.g. (("tensorflow", 1.0),)
    # bytes the jobs running at once may take by their estimates (local: a job waits for room;
    # ray: a local Ray's memory), and each task's estimate by its key (ray: its `memory`)
    max_memory: int | None = None
    estimates: dict = field(default_factory=dict)


class Executor(Protocol):
    """`run(tasks, on_done)`: each task is (key, args) for `worker.convert_job(*args)`; call
    `on_done(key, JobOutcome, attempts)` once per task, in any order; return when all are done
    (or, with fail_fast, when no more will start). KeyboardInterrupt stops the workers."""

    name: ClassVar[str]
    summary: ClassVar[str]

    @classmethod
    def create(cls, options: ExecutorOptions) -> Executor: ...

    def run(self, tasks: list[tuple], on_done: Callable[[object, JobOutcome, int], None]) -> None: ...
