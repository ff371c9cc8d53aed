"""Local workers: processes that import TensorFlow once and convert many jobs.

A worker is recycled after `recycle_after` jobs (TFLiteConverter leaks ~20 MB a call), a job
over `timeout` seconds is stopped (its worker killed), and a worker that dies (segfault, killed
for memory) fails only its own job, which is retried once in a fresh worker. With `max_memory`,
a job starts only while its estimate fits beside those of the jobs running (the first waiting
job that fits; one alone always starts). A worker whose job peaked past twice a fresh worker's
is retired too: the memory TensorFlow held is not given back (2.1 GB after the 2.1 GiB model).
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import ClassVar

from graphfreeze.batch.executors.base import ExecutorOptions
from graphfreeze.batch.memory import WORKER_BYTES
from graphfreeze.batch.results import JobOutcome


def default_jobs() -> int:
    """What cores and memory allow: a worker per core, ~2 GB of available memory each."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        pages = 0
    by_memory = pages // (2 << 30) if pages else cores
    return max(1, min(cores or 1, by_memory))


def _worker_main(conn, recycle_after: int, folder: str) -> None:
    import signal
    import tempfile

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver stops us
    # every temporary file (staging folders, TensorFlow's autograph modules) goes into `folder`,
    # which the driver removes when this worker ends, however it ends (killed on --timeout)
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    from graphfreeze.batch.worker import convert_job
    from graphfreeze.process.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()
    conn.send("ready")  # a job's --timeout counts from here, not from the worker's start-up
    for _ in range(recycle_after):
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        conn.send(convert_job(*task))


@dataclass
class _Worker:
    process: multiprocessing.Process
    conn: object
    task: tuple | None = None  # (key, args, attempt)
    started: float = 0.0
    done: int = 0
    ready: bool = False  # TensorFlow imported: a job's clock runs from then
    folder: str = ""  # its temp dir, removed when it is retired


@dataclass
class LocalExecutor:
    name: ClassVar[str] = "local"
    summary: ClassVar[str] = "worker processes on this machine"
    jobs: int = field(default_factory=default_jobs)
    timeout: float | None = None
    recycle_after: int = 8
    fail_fast: bool = False
    max_memory: int | None = None
    estimates: dict = field(default_factory=dict)  # task key -> its estimated bytes
    _root: str = field(default="", init=False, repr=False)  # the workers' temp dirs (a run's)

    @classmethod
    def create(cls, options: ExecutorOptions) -> LocalExecutor:
        return cls(options.jobs or default_jobs(), options.timeout, options.recycle_after,
                   options.fail_fast, options.max_memory, options.estimates)

    def run(self, tasks: list[tuple], on_done: Callable[[object, JobOutcome, int], None]) -> None:
        """Run each (key, args) task as convert_job(*args); on_done(key, result, attempts)."""
        from graphfreeze.io.temporaries import private_dir

        context = multiprocessing.get_context("spawn")
        pending = deque((key, args, 1) for key, args in tasks)
        workers: list[_Worker] = []
        failed = False
        self._root = private_dir("graphfreeze-batch")
        try:
            while pending or any(w.task for w in workers):
                if failed and self.fail_fast:
                    break
                while pending and (i := self._fitting(pending, workers)) is not None and \
                        (idle := self._idle(workers, context)) is not None:
                    idle.task, idle.started = pending[i], time.monotonic()
                    del pending[i]
                    idle.conn.send(idle.task[1])
                busy = [w for w in workers if w.task]
                ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy],
                             timeout=self._wait_time(busy))
                for worker in busy:
                    key, args, attempt = worker.task
                    if worker.conn in ready or worker.conn.poll():
                        try:
                            result = worker.conn.recv()
                        except EOFError:
                            result = None
                        if result == "ready":
                            worker.ready, worker.started = True, time.monotonic()
                            continue
                        if result is not None:
                            worker.task, worker.done = None, worker.done + 1
                            failed |= not result.ok
                            on_done(key, result, attempt)
                            if worker.done >= self.recycle_after or \
                                    (result.peak_memory or 0) > 2 * WORKER_BYTES:
                                self._retire(worker, workers)
                            continue
                    if not worker.process.is_alive():
                        self._retire(worker, workers)
                        code = worker.process.exitcode
                        why = f"signal {-code}" if code and code < 0 else f"exit code {code}"
                        if attempt == 1:
                            pending.appendleft((key, args, 2))  # once more, in a fresh worker
                        else:
                            failed = True
                            on_done(key, JobOutcome.crashed(why), attempt)
                    elif self.timeout and worker.ready and \
                            time.monotonic() - worker.started > self.timeout:
                        self._retire(worker, workers, kill=True)
                        failed = True
                        on_done(key, JobOutcome.timed_out(self.timeout, self.timeout), attempt)
        finally:
            from graphfreeze.io.temporaries import remove, signals_deferred

            with signals_deferred():  # a second Ctrl-C must not leave workers or their files
                for worker in list(workers):
                    self._retire(worker, workers, kill=bool(worker.task))
                remove(self._root)

    def _fitting(self, pending: deque, workers: list[_Worker]) -> int | None:
        """The index of the first waiting task whose estimate fits in `max_memory` beside the
        running ones' (any, when none runs), or None."""
        using = sum(self.estimates.get(w.task[0], 0) for w in workers if w.task)
        for i, (key, _, _) in enumerate(pending):
            if self.max_memory is None or not using or \
                    using + self.estimates.get(key, 0) <= self.max_memory:
                return i
        return None

    def _idle(self, workers: list[_Worker], context) -> _Worker | None:
        for worker in [w for w in workers if w.task is None and not w.process.is_alive()]:
            self._retire(worker, workers)  # died while idle: make room for a fresh one
        for worker in workers:
            if worker.task is None and worker.process.is_alive():
                return worker
        if len(workers) >= max(1, self.jobs):
            return None
        parent, child = context.Pipe()
        folder = tempfile.mkdtemp(prefix="worker-", dir=self._root)
        process = context.Process(target=_worker_main, args=(child, self.recycle_after, folder),
                                  daemon=True)
        process.start()
        child.close()
        worker = _Worker(process, parent, folder=folder)
        workers.append(worker)
        return worker

    def _wait_time(self, busy: list[_Worker]) -> float | None:
        busy = [w for w in busy if w.ready]
        if not self.timeout or not busy:
            return None
        now = time.monotonic()
        return max(0.05, min(self.timeout - (now - w.started) for w in busy) + 0.05)

    @staticmethod
    def _retire(worker: _Worker, workers: list[_Worker], kill: bool = False) -> None:
        if worker in workers:
            workers.remove(worker)
        try:
            if kill:
                worker.process.kill()
            elif worker.process.is_alive():
                worker.conn.send(None)
        except (OSError, ValueError):
            pass
        worker.process.join(timeout=10)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()
        from graphfreeze.io.temporaries import remove

        remove(worker.folder)  # what it left if it was killed or died
