"""Trials in a child process: the batch workers' own loop (`local._worker_main` running
`worker.convert_job`), kept alive across trials so TensorFlow is imported once; a trial over
its timeout kills the child, and a child that dies (a converter's segfault) is an outcome too."""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from multiprocessing.connection import wait

RECYCLE_AFTER = 20  # TFLiteConverter leaks ~20 MB a call


class Trials:
    """`run(prepared)` -> JobOutcome, one at a time, in a child that outlives each trial."""

    def __init__(self, timeout: float | None = None, cwd: str = ""):
        from graphfreeze.io.temporaries import private_dir

        self.timeout, self.cwd = timeout, cwd or os.getcwd()
        self.count, self.seconds = 0, 0.0
        self._root = private_dir("graphfreeze-reduce")
        self._child = None  # (process, conn, folder, done)
        self._start = 0.0

    def run(self, prepared):
        self.submit(prepared)
        return self.result()

    def submit(self, prepared) -> None:
        """Start a trial; `result()` waits for it (the caller works meanwhile)."""
        from graphfreeze.batch.worker import shippable

        self._start = time.monotonic()
        process, conn, folder, done = self._ready()
        conn.send((shippable(prepared), self.cwd))
        self.count += 1

    def result(self):
        from graphfreeze.batch.results import JobOutcome

        start = self._start
        process, conn, folder, done = self._child
        got = wait([conn, process.sentinel], timeout=self.timeout)
        outcome = None
        if conn in got or conn.poll():
            try:
                outcome = conn.recv()
            except EOFError:
                outcome = None
        if outcome is not None:
            self._child = (process, conn, folder, done + 1)
            if done + 1 >= RECYCLE_AFTER:
                self.close()
        elif not got:  # still running at the timeout
            self.close(kill=True)
            outcome = JobOutcome.timed_out(self.timeout, self.timeout)
        else:
            process.join(timeout=10)
            code = process.exitcode
            self.close(kill=True)
            why = f"signal {-code}" if code and code < 0 else f"exit code {code}"
            outcome = JobOutcome("failed", error=f"the converting process died ({why})",
                                 exit_code=1, details={"crashed": why})
        self.seconds += time.monotonic() - start
        return outcome

    def _ready(self):
        if self._child is not None and self._child[0].is_alive():
            return self._child
        self.close()
        from graphfreeze.batch.executors.local import _worker_main

        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        folder = tempfile.mkdtemp(prefix="trial-", dir=self._root)
        process = context.Process(target=_worker_main, args=(child, 10 ** 6, folder),
                                  daemon=True)
        process.start()
        child.close()
        if parent.recv() != "ready":  # TensorFlow imported: the trials' clock starts
            raise RuntimeError("the trial process did not start")
        self._child = (process, parent, folder, 0)
        return self._child

    def close(self, kill: bool = False) -> None:
        """End the child (and remove its temp folder)."""
        if self._child is None:
            return
        process, conn, folder, _ = self._child
        self._child = None
        try:
            if kill:
                process.kill()
            elif process.is_alive():
                conn.send(None)
        except (OSError, ValueError):
            pass
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join()
        conn.close()
        from graphfreeze.io.temporaries import remove

        remove(folder)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        from graphfreeze.io.temporaries import remove

        self.close(kill=exc[0] is not None)
        remove(self._root)
