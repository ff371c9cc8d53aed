"""`freeze batch --executor ray --address` on a running Ray cluster of two nodes on 127.0.0.1
(tests/ray_cluster.py: a head and a worker node, each its own raylet), the jobs sent to the
worker node by a custom resource only it has (`--resource`): for every local source kind (a
checkpoint prefix, a model_dir, a SavedModel, .keras, .h5, a frozen .pb) named relative to a
manifest run from its parent folder, the bytes `--executor local` writes; a model on gs:// (the
GCS emulator) read by the worker node itself; a model, a checkpoint prefix or a --meta graph only
the driver has, and an address nobody listens on, each one line."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from tests.batch.executors.test_ray_executor import (
    KIND_NAMES,
    converted_locally,
    digests,
    freeze_batch,
    jobs_ok,
    workspace,
)
from tests.gcs_emulator import GcsEmulator
from tests.ray_cluster import RayCluster

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")

WORKER = "graphfreeze_worker"  # the custom resource only the worker node has
TASK = "_quiet_convert_job"  # the Ray task a job runs as: named in its worker's log
GCS_MANIFEST = """\
schema_version = 1
[defaults]
outputs = "probs"

[[model]]
source = "gs://bucket/models/iris"
targets = ["android", "tflite"]

[[model]]
name = "prefix"
source = "gs://bucket/models/iris/model.ckpt-200"
"""


@pytest.fixture(scope="module")
def gcs(samples, tmp_path_factory):
    """The GCS emulator with samples/iris at gs://bucket/models/iris."""
    with GcsEmulator(tmp_path_factory.mktemp("gcs")) as emulator:
        emulator.create_bucket("bucket")
        for path in (samples / "iris").iterdir():
            emulator.put("bucket", f"models/iris/{path.name}", path.read_bytes())
        yield emulator


@pytest.fixture(scope="module")
def cluster(gcs):
    """A head (1 CPU) and a worker node (2 CPUs, WORKER: 2) whose processes reach the GCS
    emulator (as a cloud cluster's nodes reach GCS); stopped, every process of it, at the end."""
    start = time.monotonic()
    with RayCluster([{"num_cpus": 1}, {"num_cpus": 2, "resources": {WORKER: 2}}],
                    env=gcs.env()) as running:
        print(f"Ray cluster of 2 nodes up in {time.monotonic() - start:.1f} s")
        yield running
    print(f"Ray cluster up and down: {time.monotonic() - start:.1f} s")


@pytest.fixture(scope="module")
def local(samples, other_samples, tmp_path_factory):
    """Every source kind's manifest converted by `--executor local`: its folder (shared with
    tests/batch/executors/test_ray_executor.py: the same run)."""
    return converted_locally(samples, other_samples, tmp_path_factory)


def on_cluster(cluster, gcs, folder, **kwargs):
    """`freeze batch MANIFEST --executor ray --address ... --resource WORKER` in `folder`."""
    return freeze_batch(folder, "--executor", "ray", "--address", cluster.address,
                        "--resource", WORKER, env=cluster.env(gcs.env()), **kwargs)


def sidecar_from(parent: str, path: Path) -> dict:
    """The sidecar at `path` as a run in the manifest's folder writes it: its source paths
    (those of a run from `parent`, the manifest's parent folder) made relative to the
    manifest."""
    sidecar = json.loads(path.read_text())
    for key, value in sidecar["source"].items():
        if isinstance(value, str) and value.startswith(parent + "/"):
            sidecar["source"][key] = value[len(parent) + 1:]
    return sidecar


def test_cluster_gives_the_bytes_local_gives(cluster, gcs, local, samples, other_samples,
                                             tmp_path):
    folder = workspace(samples, tmp_path / "ws", other=other_samples)
    done = on_cluster(cluster, gcs, tmp_path, manifest="ws/models.toml")  # from its parent
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert jobs_ok(folder / "dist") == sorted((name, "ok", 1) for name in KIND_NAMES)
    for name in KIND_NAMES:
        made, expected = digests(folder / "dist" / name), digests(local / "dist" / name)
        assert sorted(made) == sorted(expected), name
        for file in made:
            if file.endswith(".json"):  # the source as typed: ws/iris, not iris
                assert sidecar_from("ws", folder / "dist" / name / file) == \
                    json.loads((local / "dist" / name / file).read_text()), file
            else:
                assert made[file] == expected[file], file
    assert TASK in cluster.logs(1) and TASK not in cluster.logs(0)  # on the worker node


def test_model_on_gcs_is_read_by_the_worker_node(cluster, gcs, local, tmp_path):
    """A model_dir and a checkpoint prefix on gs://."""
    (tmp_path / "models.toml").write_text(GCS_MANIFEST)
    done = on_cluster(cluster, gcs, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    made, expected = digests(tmp_path / "dist" / "iris"), digests(local / "dist" / "iris")
    assert sorted(made) == sorted(expected)
    for name in ("model.ckpt-200.pb", "model.ckpt-200.tflite"):  # sidecars name the source
        assert made[name] == expected[name], name
    prefix = digests(tmp_path / "dist" / "prefix")  # the same checkpoint by its prefix
    assert sorted(prefix) == ["model.ckpt-200.pb", "model.ckpt-200.pb.json"]
    assert prefix["model.ckpt-200.pb"] == expected["model.ckpt-200.pb"]
    assert TASK in cluster.logs(1) and TASK not in cluster.logs(0)


def test_path_only_the_driver_has_is_one_line(cluster, gcs, samples, tmp_path):
    """/dev/fd/N/...: N is the models folder held open by the driver process only (passed to
    it, as fd N), so the path exists for the driver, which plans the job, and for no other
    process: as a folder of the driver's machine exists on no other node. A model_dir there, a
    checkpoint prefix there (no file has its name), and a checkpoint every node has whose --meta
    graph is there: the source, or the one file missing, named."""
    shutil.copytree(samples / "iris", tmp_path / "models" / "iris")
    shutil.copytree(samples / "iris_named", tmp_path / "shared")
    (tmp_path / "shared" / "model.ckpt-200.meta").rename(tmp_path / "models" / "graph.meta")
    fd = os.open(tmp_path / "models", os.O_RDONLY | os.O_DIRECTORY)
    models = f"/dev/fd/{fd}"
    (tmp_path / "models.toml").write_text(f"""\
schema_version = 1
[defaults]
outputs = "probs"

[[model]]
source = "{models}/iris"

[[model]]
name = "prefix"
source = "{models}/iris/model.ckpt-200"

[[model]]
name = "meta"
source = "shared/model.ckpt-200"
meta = "{models}/graph.meta"
""")
    try:
        done = on_cluster(cluster, gcs, tmp_path, pass_fds=(fd,))
    finally:
        os.close(fd)
    assert done.returncode == 7, done.stdout + done.stderr
    fix = ("not on Ray node 127.0.0.1 (a path on the driver's machine); put the model on gs:// "
           "or in a folder every node mounts at that path")
    assert sorted(done.stdout.splitlines()[:3]) == [
        f"FAILED  {name:<22}error: {path}: {fix}" for name, path in [
            ("iris", f"{models}/iris"), ("meta", f"{models}/graph.meta"),
            ("prefix", f"{models}/iris/model.ckpt-200")]]
    assert done.stderr == ""
    assert not (tmp_path / "dist" / "iris").exists()


def test_address_nobody_listens_on_is_one_line(samples, tmp_path):
    with socket.socket() as probe:  # a port just free: nobody listens there
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    folder = workspace(samples, tmp_path)
    # a hang guard, not a timing: Ray's own retries would go on for minutes
    done = freeze_batch(folder, "--executor", "ray", "--address", address, timeout=180)
    assert done.returncode == 6
    assert done.stderr.splitlines() == [
        f"error: --address {address}: no Ray cluster answers there (Connection refused); start "
        "one with `ray start --head`, or give the head node's address"]
    assert not (folder / "dist").exists()  # before any job ran


def test_driver_without_the_clusters_token_is_one_line(cluster, gcs, samples, tmp_path):
    folder = workspace(samples, tmp_path)
    env = {k: v for k, v in cluster.env().items() if k != "RAY_AUTH_TOKEN"}
    env["HOME"] = str(tmp_path)  # no ~/.ray/auth_token either
    done = freeze_batch(folder, "--executor", "ray", "--address", cluster.address, env=env)
    assert done.returncode == 6
    (line,) = done.stderr.splitlines()  # Ray's own retry lines are not shown
    assert line.startswith(f"error: --address {cluster.address}: cannot join that Ray cluster: ")
    assert "no authentication token was found" in line  # Ray's words, with where to put it
    assert not (folder / "dist").exists()


def test_resource_no_node_has_is_one_line(cluster, gcs, samples, tmp_path):
    folder = workspace(samples, tmp_path)
    done = freeze_batch(folder, "--executor", "ray", "--address", cluster.address,
                        "--resource", "tpu_v9=1", env=cluster.env(gcs.env()))
    assert done.returncode == 6
    assert done.stderr.splitlines() == [
        f"error: --resource tpu_v9=1: no live node of the Ray cluster (--address "
        f"{cluster.address}) has it (its custom resources: {WORKER}); start a node with "
        "`ray start --address ... --resources '{\"tpu_v9\": 1}'`"]
    assert not (folder / "dist").exists()


def test_address_of_a_server_that_is_not_ray_is_one_line(samples, tmp_path):
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    folder = workspace(samples, tmp_path)
    try:  # a hang guard, not a timing: Ray's own retries would go on for a minute and more
        done = freeze_batch(folder, "--executor", "ray", "--address", address, timeout=180)
    finally:
        server.shutdown()
    assert done.returncode == 6
    assert done.stderr.splitlines() == [
        f"error: --address {address}: something listens there but it is not a Ray cluster (no "
        "gRPC); give the head node's address (`ray start --head` prints it)"]
    assert not (folder / "dist").exists()
