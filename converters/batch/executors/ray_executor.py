"""Ray: each job a Ray task on an existing cluster (`--address`, else RAY_ADDRESS as Ray reads
it), or on a local Ray started for the run (bound to 127.0.0.1, stopped at the end). Ray keeps
its session folder (sockets, logs) where it would without graphfreeze: in the user's TMPDIR or
/tmp/ray, not in the run's private temp dir. Ray retries a task whose worker died once
(`max_retries=1`) and recycles worker processes (`max_calls`); `--resource NAME=N` sends jobs to
the nodes that have that custom resource; each task reserves its job's estimated memory (Ray's
`memory` resource: a node runs only the jobs its memory holds; a local Ray has --max-memory, or
what Ray finds). Artifacts come back to the driver as bytes, so outputs
need no shared filesystem; a node reads the model itself, so the files of a local source (as its
kind names them: `Source.files`, e.g. a checkpoint prefix's .index, .data-* and .meta) must exist
on every node at the driver's paths (else the job fails in one line: use gs://)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from graphfreeze.batch.executors.base import ExecutorOptions
from graphfreeze.batch.results import FAILED, JobOutcome
from graphfreeze.errors import ConfigError, first_line, install_hint

CONNECT_SECONDS = 5.0  # to reach a cluster's address (Ray itself retries for minutes)


@dataclass
class RayExecutor:
    name: ClassVar[str] = "ray"
    summary: ClassVar[str] = "Ray tasks on a cluster (--address) or a local Ray"
    options: ExecutorOptions = field(default_factory=ExecutorOptions)

    @classmethod
    def create(cls, options: ExecutorOptions) -> RayExecutor:
        return cls(options)

    def run(self, tasks: list[tuple], on_done: Callable[[object, JobOutcome, int], None]) -> None:
        address = self.options.address or os.environ.get("RAY_ADDRESS") or None
        if address is None and self.options.resources:
            raise ConfigError("--resource sends jobs to a cluster's nodes that have it; give the "
                              "cluster's --address (a local Ray has no custom resources)")
        if address is None or _loopback(address):  # Ray's single-machine mode (read when it is
            # imported): every server on 127.0.0.1, and 127.0.0.1 not swapped for the host's IP
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            import ray
        except ImportError as err:
            raise ConfigError(f"--executor ray needs Ray: {install_hint('ray')}") from err
        started = not ray.is_initialized()
        if started:
            self._init(ray, address)
        try:
            self._run(ray, tasks, on_done)
        finally:
            if started:
                ray.shutdown()

    def _init(self, ray, address: str | None) -> None:
        import logging

        from graphfreeze.io.temporaries import user_tmpdir
        from graphfreeze.process.quiet import native_stderr_off

        if address:
            where = f"--address {address}" if self.options.address else f"RAY_ADDRESS={address}"
            _listening(address, where)
            # Ray's own temp dir (where `ray start` wrote the address file); its C++ client's
            # retry lines off stderr: what went wrong is said in the one line below
            with user_tmpdir(), native_stderr_off():
                try:
                    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
                except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as err:
                    raise ConfigError(f"{where}: cannot join that Ray cluster: {_why(err)}") \
                        from err
            try:
                _has_resources(ray, self.options.resources, where)
                _has_memory(ray, self.options.estimates, where)
            except ConfigError:
                ray.shutdown()
                raise
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        with user_tmpdir():  # its session folder (sockets: 107 bytes at most) where Ray puts it
            ray.init(address="local", num_cpus=self.options.jobs or None, include_dashboard=False,
                     log_to_driver=False, logging_level=logging.ERROR,
                     _node_ip_address="127.0.0.1", _memory=self.options.max_memory)
        try:
            _has_memory(ray, self.options.estimates, "a local Ray")
        except ConfigError:
            ray.shutdown()
            raise

    def _run(self, ray, tasks, on_done) -> None:
        try:
            remote = ray.remote(num_cpus=1, max_retries=1, max_calls=self.options.recycle_after,
                                resources=dict(self.options.resources) or None)(
                _quiet_convert_job)
        except ValueError as err:  # e.g. CPU as a custom resource
            raise ConfigError(f"--resource: {first_line(err)}") from err
        timeout, fail_fast = self.options.timeout, self.options.fail_fast
        limit = self.options.jobs or len(tasks)
        queue = list(tasks)
        running: dict = {}  # ref -> (key, started)
        failed = False
        try:
            while queue or running:
                while queue and len(running) < limit and not (failed and fail_fast):
                    key, args = queue.pop(0)
                    task = remote.options(memory=self.options.estimates[key]) \
                        if key in self.options.estimates else remote
                    running[task.remote(*args, source_files(*args))] = (key, time.monotonic())
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
                    if timeout and now - began > timeout:
                        ray.cancel(ref, force=True)
                        running.pop(ref)
                        failed = True
                        on_done(key, JobOutcome.timed_out(timeout, now - began), 1)
                if failed and fail_fast:
                    queue.clear()
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def _wait(self, running: dict) -> float | None:
        if not self.options.timeout:
            return None
        now = time.monotonic()
        return max(0.05, min(self.options.timeout - (now - began) for _, began in running.values()))


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of `host:port` or `ray://host:port`; None for Ray's other spellings."""
    from urllib.parse import urlsplit

    parts = urlsplit("//" + address.split("://", 1)[-1])
    try:
        return (parts.hostname, parts.port) if parts.hostname and parts.port else None
    except ValueError:  # a port that is not one: Ray says so
        return None


def _loopback(address: str) -> bool:
    import ipaddress

    host = (_host_port(address) or ("",))[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _why(err: BaseException) -> str:
    """The root of Ray's error: the last line of its first cause (the text of a traceback)."""
    while err.__cause__ is not None:
        err = err.__cause__
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


def _listening(address: str, where: str) -> None:
    """A one-line ConfigError, within CONNECT_SECONDS, if nothing listens at `address`."""
    import socket

    target = _host_port(address)
    if target is None:
        return
    try:
        sock = socket.create_connection(target, timeout=CONNECT_SECONDS)
    except OSError as err:
        why = err.strerror or str(err) or type(err).__name__
        raise ConfigError(f"{where}: no Ray cluster answers there ({why}); start one with "
                          "`ray start --head`, or give the head node's address") from err
    with sock:  # Ray's own client would retry a server that is not Ray's for a minute
        if os.environ.get("RAY_USE_TLS", "0") in ("0", "") and not _speaks_grpc(sock):
            raise ConfigError(f"{where}: something listens there but it is not a Ray cluster "
                              "(no gRPC); give the head node's address (`ray start --head` "
                              "prints it)")


def _speaks_grpc(sock) -> bool:
    """Whether the server on `sock` answers an HTTP/2 preface with SETTINGS, as every gRPC
    server (Ray's GCS and Ray Client) does at once; a web server or a silent port does not."""
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
    try:
        sock.sendall(preface)
        frame = b""
        while len(frame) < 9:
            chunk = sock.recv(9 - len(frame))
            if not chunk:
                return False
            frame += chunk
    except OSError:
        return False
    return frame[3] == 4  # the frame's type: SETTINGS


def _has_resources(ray, resources: tuple, where: str) -> None:
    """A one-line ConfigError if no live node has each `--resource` (Ray would wait forever)."""
    nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
    for name, amount in resources:
        if not any(node.get(name, 0) >= amount for node in nodes):
            custom = sorted({k for node in nodes for k in node if not k.startswith("node:")}
                            - {"CPU", "GPU", "memory", "object_store_memory"})
            raise ConfigError(
                f"--resource {name}={amount:g}: no live node of the Ray cluster ({where}) has it (its "
                f"custom resources: {', '.join(custom) or 'none'}); start a node with "
                f"`ray start --address ... --resources '{{\"{name}\": {amount:g}}}'`")


def _has_memory(ray, estimates: dict, where: str) -> None:
    """A one-line ConfigError if a job's estimate is over every live node's memory (Ray
    would wait forever)."""
    from graphfreeze.batch.memory import shown

    most = max((node["Resources"].get("memory", 0) for node in ray.nodes() if node.get("Alive")),
               default=0)
    for key, size in estimates.items():
        if size > most:
            raise ConfigError(f"{key}: needs about {shown(size)} (estimated from its model's "
                              f"size), over the {shown(int(most))} of memory the largest node of "
                              f"the Ray cluster ({where}) has; add a node with more")


def source_files(prepared, cwd: str) -> list[str]:
    """The local files the job's source reads (`Source.files`, what the batch cache hashes: a
    checkpoint prefix's .index, .data-* and .meta), as paths of the driver's machine; [] for a
    source on gs:// and the like, or one its kind finds faulty here (the job then fails on the
    node as it would on the driver, saying what is wrong)."""
    from graphfreeze.errors import GraphFreezeError
    from graphfreeze.io import storage

    if storage.is_remote(prepared.request.source):
        return []
    path = os.path.join(cwd, prepared.request.source)  # an absolute source stays as is
    try:
        files = prepared.source.files(path, prepared.source_options)
    except GraphFreezeError:
        return []
    return [os.path.join(cwd, name) for name in files if not storage.is_remote(name)]


def _missing_on_node(prepared, cwd: str, files: list[str]) -> JobOutcome | None:
    """A failed outcome if one of the source's `files` (source_files) is not on this node,
    naming the source if none is, else None."""
    missing = [name for name in files if not os.path.exists(name)]
    if not missing:
        return None
    import ray

    where = os.path.join(cwd, prepared.request.source) if missing == files else missing[0]
    return JobOutcome(FAILED, 0.0, exit_code=ConfigError.exit_code, error=(
        f"{where}: not on Ray node {ray.util.get_node_ip_address()} (a path on the driver's "
        "machine); put the model on gs:// or in a folder every node mounts at that path"))


def _quiet_convert_job(prepared, cwd: str, files: list[str]) -> JobOutcome:
    """convert_job in a Ray worker, TensorFlow's environment and logs as in a local worker."""
    from graphfreeze.batch.worker import convert_job
    from graphfreeze.io.temporaries import private_tempdir
    from graphfreeze.process.quiet import import_tensorflow_quietly

    missing = _missing_on_node(prepared, cwd, files)
    if missing is not None:
        return missing
    with private_tempdir("graphfreeze-task"):  # a task cancelled on --timeout kills its worker:
        import_tensorflow_quietly()             # the next task there sweeps what it left
        return convert_job(prepared, cwd)
