"""`freeze batch --executor ray`: on a local Ray the run starts itself (2 CPUs, bound to
127.0.0.1, shut down at the end), the artifacts are the bytes `--executor local` writes."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Ray is imported only by the run itself (its settings are read when it is first imported)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")

FREEZE = str(Path(sys.executable).with_name("freeze"))
MANIFEST = """\
schema_version = 1
[defaults]
outputs = "probs"

[[model]]
source = "iris"
targets = ["android", "tflite"]

[[model]]
source = "runs/*"
"""
NAMES = ["iris", "iris_resource"]


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def workspace(samples: Path, folder: Path) -> Path:
    shutil.copytree(samples / "iris", folder / "iris")
    shutil.copytree(samples / "iris_resource", folder / "runs" / "iris_resource")
    (folder / "models.toml").write_text(MANIFEST)
    return folder


@pytest.fixture(scope="module")
def runs(samples, tmp_path_factory):
    """The manifest converted with --executor local (a subprocess) and with Ray (in-process,
    Ray not imported before the run): (local folder, ray folder, Report, what the driver saw of
    the cluster at each result, whether Ray was still initialized after)."""
    from graphfreeze.batch import run as batch_run

    local = workspace(samples, tmp_path_factory.mktemp("local"))
    start = time.monotonic()
    done = subprocess.run([FREEZE, "batch", "models.toml", "--executor", "local", "--jobs", "2",
                           "--no-cache"], cwd=local, capture_output=True, text=True, timeout=600)
    print(f"local executor: {time.monotonic() - start:.1f} s")
    assert done.returncode == 0, done.stderr

    on_ray = workspace(samples, tmp_path_factory.mktemp("ray"))
    cluster = []

    def seen(result) -> None:  # the driver's view of the cluster while the run is on
        import ray

        cluster.append(sorted((n["NodeManagerAddress"], n["Resources"].get("CPU"))
                              for n in ray.nodes() if n["Alive"]))

    start = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(on_ray)  # the same cwd-relative spelling of every source as the local run
        try:
            report = batch_run("models.toml", executor="ray", jobs=2, cache=None, on_result=seen)
        finally:
            import ray

            initialized = ray.is_initialized()
            if initialized:
                ray.shutdown()
    print(f"ray executor: {time.monotonic() - start:.1f} s")
    return local, on_ray, report, cluster, initialized


def test_ray_gives_the_bytes_local_gives(runs):
    local, on_ray, report, cluster, initialized = runs
    assert not initialized  # the run shut down the Ray it started
    assert [(j.name, j.status, j.attempts) for j in report.jobs] == [(n, "ok", 1) for n in NAMES], \
        [j.error for j in report.jobs]
    assert [[cpus for _, cpus in nodes] for nodes in cluster] == [[2.0]] * 2  # one node, 2 CPUs
    local_report = json.loads((local / "dist" / "report.json").read_text())
    assert [(j["name"], j["status"]) for j in local_report["jobs"]] == [(n, "ok") for n in NAMES]
    for name in NAMES:
        assert digests(on_ray / "dist" / name) == digests(local / "dist" / name), name
    assert sorted(digests(on_ray / "dist" / "iris")) == [
        "model.ckpt-200.pb", "model.ckpt-200.pb.json", "model.ckpt-200.tflite",
        "model.ckpt-200.tflite.json"]


def test_local_ray_binds_loopback(runs):
    _, _, _, cluster, _ = runs
    assert cluster and all(address == "127.0.0.1" for nodes in cluster for address, _ in nodes)
