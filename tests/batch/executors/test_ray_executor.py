"""`freeze batch --executor ray` with no --address, as typed: the run starts a local Ray (bound
to 127.0.0.1, its session folder where Ray keeps it, in the user's TMPDIR, not in the run's
private temp dir, whose long path overflowed Ray's socket names: issue 23) and stops it at the
end; the artifacts are the bytes `--executor local` writes."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import _once, _shared

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


def workspace(samples: Path, folder: Path, manifest: str = MANIFEST) -> Path:
    shutil.copytree(samples / "iris", folder / "iris")
    shutil.copytree(samples / "iris_resource", folder / "runs" / "iris_resource")
    (folder / "models.toml").write_text(manifest)
    return folder


def freeze_batch(folder: Path, *args: str, env: dict | None = None,
                 **kwargs) -> subprocess.CompletedProcess:
    """`freeze batch models.toml ARGS --no-cache` typed in `folder`; prints how long it took."""
    start = time.monotonic()
    done = subprocess.run([FREEZE, "batch", "models.toml", *args, "--no-cache"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=600, **kwargs)
    print(f"freeze batch {' '.join(args)}: {time.monotonic() - start:.1f} s")
    return done


def processes_naming(text: str) -> list[str]:
    """Command lines of running processes that contain `text`."""
    done = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in done.stdout.splitlines() if text in line]


def converted_locally(samples: Path, tmp_path_factory) -> Path:
    """The manifest converted by the CLI with `--executor local --jobs 2`: its folder, made once
    per test run by the first pytest-xdist worker that needs it (here and in
    tests/e2e/test_ray_cluster.py; the others wait, then reuse it). Read-only use."""

    def build(folder: Path) -> None:
        workspace(samples, folder)
        done = freeze_batch(folder, "--executor", "local", "--jobs", "2")
        assert done.returncode == 0, done.stderr

    return _once(_shared(tmp_path_factory, "ray-local"), build)


@pytest.fixture(scope="module")
def runs(samples, tmp_path_factory):
    """The manifest converted with --executor local (converted_locally) and with --executor ray,
    each by the CLI; the Ray run with TMPDIR set by the user to a folder of this test's (short:
    Ray's sockets live in it). (local folder, ray folder, ray's CompletedProcess, TMPDIR, what
    ran there after)."""
    local = converted_locally(samples, tmp_path_factory)
    on_ray = workspace(samples, tmp_path_factory.mktemp("ray"))
    user_tmp = Path(tempfile.mkdtemp(prefix="gfr-", dir="/tmp"))
    try:
        ray_run = freeze_batch(on_ray, "--executor", "ray", "--jobs", "2",
                               env={**os.environ, "TMPDIR": str(user_tmp)})
        yield local, on_ray, ray_run, user_tmp, processes_naming(str(user_tmp))
    finally:
        shutil.rmtree(user_tmp, ignore_errors=True)


def test_ray_gives_the_bytes_local_gives(runs):
    local, on_ray, ray_run, _, _ = runs
    assert ray_run.returncode == 0, ray_run.stdout + ray_run.stderr
    assert ray_run.stderr == ""  # Ray's own log lines are not the user's
    for folder in (local, on_ray):
        report = json.loads((folder / "dist" / "report.json").read_text())
        assert [(j["name"], j["status"], j["attempts"]) for j in report["jobs"]] == \
            [(n, "ok", 1) for n in NAMES]
    for name in NAMES:
        assert digests(on_ray / "dist" / name) == digests(local / "dist" / name), name
    assert sorted(digests(on_ray / "dist" / "iris")) == [
        "model.ckpt-200.pb", "model.ckpt-200.pb.json", "model.ckpt-200.tflite",
        "model.ckpt-200.tflite.json"]


def test_ray_session_is_in_rays_temp_dir_and_stopped(runs):
    _, _, ray_run, user_tmp, left = runs
    assert ray_run.returncode == 0, ray_run.stderr
    # Ray's default place, $TMPDIR/ray; graphfreeze's private folder there is gone
    assert sorted(p.name for p in user_tmp.iterdir()) == ["ray"]
    (session,) = (user_tmp / "ray").glob("session_2*")
    assert (session / "sockets").is_dir()
    assert left == []  # every Ray process of the run ended with it
    nodes = re.findall(r"Registering new node\..* node_address=(\S+)",
                       (session / "logs" / "gcs_server.out").read_text())
    assert nodes == ["127.0.0.1"]  # one node, on loopback


def test_resource_needs_a_cluster(samples, tmp_path):
    folder = workspace(samples, tmp_path)
    done = freeze_batch(folder, "--executor", "ray", "--resource", "gpu")
    assert done.returncode == 6
    assert done.stderr.splitlines() == ["error: --resource sends jobs to a cluster's nodes that "
                                        "have it; give the cluster's --address (a local Ray has "
                                        "no custom resources)"]
    assert not (folder / "dist").exists()


@pytest.mark.parametrize("given", ["gpu=0", "=1", "gpu=lots"])
def test_resource_spelled_wrong(given, tmp_path):
    done = subprocess.run([FREEZE, "batch", ".", "--executor", "ray", "--resource", given],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"'{given}': write NAME or NAME=N with N > 0" in done.stderr
