"""Ray: each job a Ray task on an existing cluster (`--address`), or on a local Ray started for
the run (bound to 127.0.0.1, stopped at the end). Ray retries a task whose worker died once
(`max_retries=1`) and recycles worker processes (`max_calls`); artifacts come back to the driver
as bytes, so no shared filesystem is needed."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from graphfreeze.batch.executors.base import ExecutorOptions
from graphfreeze.batch.results import JobOutcome
from graphfreeze.errors import ConfigError


@dataclass
class RayExecutor:
    name: ClassVar[str] = "ray"
    summary: ClassVar[str] = "Ray tasks on a cluster (--address) or a local Ray"
    address: str | None = None
    jobs: int | None = None
    timeout: float | None = None
    recycle_after: int = 8
    fail_fast: bool = False

    @classmethod
    def create(cls, options: ExecutorOptions) -> RayExecutor:
        return cls(options.address, options.jobs, options.timeout, options.recycle_after,
                   options.fail_fast)

    def run(self, tasks: list[tuple], on_done: Callable[[object, JobOutcome, int], None]) -> None:
        import os

        if not self.address:  # a local Ray: loopback only (Ray reads this when imported; it is
            # its mode for single machines, which binds every server to 127.0.0.1)
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            import ray
        except ImportError as err:
            raise ConfigError("--executor ray needs Ray: pip install 'graphfreeze[ray]'") from err
        started = not ray.is_initialized()
        if started:
            self._init(ray)
        try:
            self._run(ray, tasks, on_done)
        finally:
            if started:
                ray.shutdown()

    def _init(self, ray) -> None:
        if self.address:
            ray.init(address=self.address, log_to_driver=False)
            return
        import os

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=self.jobs or None, include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1")

    def _run(self, ray, tasks, on_done) -> None:
        remote = ray.remote(num_cpus=1, max_retries=1, max_calls=self.recycle_after)(
            _quiet_convert_job)
        limit = self.jobs or len(tasks)
        queue = list(tasks)
        running: dict = {}  # ref -> (key, started)
        failed = False
        try:
            while queue or running:
                while queue and len(running) < limit and not (failed and self.fail_fast):
                    key, args = queue.pop(0)
                    running[remote.remote(*args)] = (key, time.monotonic())
                if not running:
                    break
                ready, _ = ray.wait(list(running), num_returns=1, timeout=self._wait(running))
                for ref in ready:
                    key, _ = running.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayError as err:
                        result = JobOutcome.crashed(f"Ray: {type(err).__name__}")
                    failed |= not result.ok
                    on_done(key, result, 1)
                now = time.monotonic()
                for ref, (key, began) in list(running.items()):
                    if self.timeout and now - began > self.timeout:
                        ray.cancel(ref, force=True)
                        running.pop(ref)
                        failed = True
                        on_done(key, JobOutcome.timed_out(self.timeout, now - began), 1)
                if failed and self.fail_fast:
                    queue.clear()
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def _wait(self, running: dict) -> float | None:
        if not self.timeout:
            return None
        now = time.monotonic()
        return max(0.05, min(self.timeout - (now - began) for _, began in running.values()))


def _quiet_convert_job(prepared, cwd: str) -> dict:
    """convert_job in a Ray worker, TensorFlow's environment and logs as in a local worker."""
    import graphfreeze  # noqa: F401 -- sets TensorFlow's environment
    from graphfreeze.batch.worker import convert_job
    from graphfreeze.io.temporaries import private_tempdir
    from graphfreeze.process.quiet import import_tensorflow_quietly

    with private_tempdir("graphfreeze-task"):  # a task cancelled on --timeout kills its worker:
        import_tensorflow_quietly()             # the next task there sweeps what it left
        return convert_job(prepared, cwd)
