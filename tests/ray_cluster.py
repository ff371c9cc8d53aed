"""A real multi-node Ray cluster on 127.0.0.1 for tests: `with RayCluster(nodes) as cluster:`.

Each node is its own raylet (with its object store, its own resources and temp dir), started
by Ray's `ray.cluster_utils.Cluster` in a process of its own, in its own process group: the
test stops exactly the cluster it started (`ray stop` would kill every Ray on the machine).
`ray start` cannot make this cluster: on Linux it swaps --node-ip-address 127.0.0.1 for the
host's address and listens on every interface, and in Ray's single-machine mode
(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: every server on 127.0.0.1) it refuses a second node.
Cluster starts each node at the address given. Its processes use token auth with a token of
their own (RAY_AUTH_TOKEN in `env()`), so no other Ray's driver can join it and ~/.ray is not
read.

    python -m tests.ray_cluster SPEC.json   # the process: prints the address, stops on EOF

(a module run from the checkout's root: as a script, tests/ would come first on sys.path, and a
test folder named like a standard module, tests/inspect, would hide it from Ray)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READY_SECONDS = 180  # for every node to be up


class RayCluster:
    """`nodes`: one dict per node (head first): num_cpus, resources; `env`: the environment
    of every node and so of its workers (e.g. a GCS emulator's)."""

    def __init__(self, nodes: list[dict], env: dict[str, str] | None = None):
        # short: a node's sockets live under its temp dir, and AF_UNIX paths stop at 107 bytes
        self.root = Path(tempfile.mkdtemp(prefix="gfray-", dir="/tmp"))
        (self.root / "ray").mkdir()  # Ray's default temp dir here (RAY_TMPDIR): its address file
        self.nodes = [{**node, "temp_dir": str(self.root / f"node{i}")}
                      for i, node in enumerate(nodes)]
        self._env = {**(env or os.environ), "RAY_AUTH_MODE": "token",
                     "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0",
                     "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_TMPDIR": str(self.root)}
        self.address = ""
        self._process: subprocess.Popen | None = None

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (os.environ) plus what a driver needs to join: the cluster's token."""
        ours = {k: self._env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN",
                                          "RAY_USAGE_STATS_ENABLED")}
        return {**(base or os.environ), **ours}

    def __enter__(self) -> RayCluster:
        spec, log = self.root / "spec.json", self.root / "cluster.log"
        spec.write_text(json.dumps(self.nodes))
        with open(log, "wb") as stderr:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.ray_cluster", str(spec)], cwd=ROOT,
                env=self._env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True)
        # the address, once every node is up
        up = select.select([self._process.stdout], [], [], READY_SECONDS)[0]
        line = self._process.stdout.readline() if up else ""
        if not line:
            text = log.read_text()[-3000:]
            self.__exit__()
            raise RuntimeError(f"the Ray cluster did not start:\n{text}")
        self.address = json.loads(line)["address"]
        return self

    def __exit__(self, *exc) -> None:
        process = self._process
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()  # the cluster shuts its nodes down, then exits
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.waitid(  # exited, not yet reaped: its pid
                os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):  # is still ours
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):  # what is left of its process group
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def logs(self, node: int) -> str:
        """What the worker processes of node `node` (0: the head) wrote: Ray names each task
        there as it starts."""
        return "".join(p.read_text(errors="replace") for p in
                       sorted(Path(self.nodes[node]["temp_dir"]).glob("session_*/logs/worker-*")))


def _serve(spec: str) -> None:
    from ray.cluster_utils import Cluster

    nodes = json.loads(Path(spec).read_text())
    common = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={**common, **nodes[0]})
    for node in nodes[1:]:
        cluster.add_node(**common, **node)
    cluster.wait_for_nodes()
    print(json.dumps({"address": cluster.address}), flush=True)
    sys.stdin.read()  # until the test closes our stdin (or dies)
    cluster.shutdown()


if __name__ == "__main__":
    _serve(sys.argv[1])
