"""`freeze batch --max-memory` (issue 46): each job's memory estimated from its model's size
before it starts; with --jobs 2 and a budget that holds one job at a time, the second starts
after the first ended; a job over the whole budget is one line naming it and its estimate,
before any work; the reports carry each job's estimate and its worker's measured peak."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from graphfreeze.batch import memory
from graphfreeze.errors import ConfigError

FREEZE = str(Path(sys.executable).with_name("freeze"))
MANIFEST = """\
schema_version = 1
[defaults]
outputs = "probs"  # (android, into dist/)
[[model]]
source = "iris"
[[model]]
source = "iris_partitioned"
"""


@pytest.fixture
def two(samples, tmp_path, monkeypatch):
    """A folder with two small checkpoints and a manifest of both; (folder, {job: estimate})."""
    from graphfreeze.batch.jobs import prepare_jobs
    from graphfreeze.batch.manifest import parse_manifest
    from graphfreeze.registry import Registry

    for name in ("iris", "iris_partitioned"):
        shutil.copytree(samples / name, tmp_path / name)
    (tmp_path / "models.toml").write_text(MANIFEST)
    monkeypatch.chdir(tmp_path)
    registry = Registry.default()
    jobs = prepare_jobs(parse_manifest("models.toml", registry), registry)
    return tmp_path, {job.name: memory.estimate(job.prepared) for job in jobs}


def batch(folder: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([FREEZE, "batch", "models.toml", "--no-cache", *args], cwd=folder,
                          capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.parametrize("executor", [
    "local", pytest.param("ray", marks=pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason="needs ray"))])
def test_two_jobs_that_fit_one_at_a_time_run_one_after_the_other(two, executor):
    """--jobs 2, but the budget holds the larger job and not both: the second job's worker
    began it after the first one's had finished (the report's times, not the wall clock).
    On a local Ray, the budget is its memory and each task reserves its job's estimate."""
    folder, estimates = two
    budget = max(estimates.values()) + min(estimates.values()) // 2
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(folder / "summary.md")}  # (report.md too)
    done = batch(folder, "--jobs", "2", "--max-memory", str(budget), "--executor", executor,
                 env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = json.loads((folder / "dist" / "report.json").read_text())["jobs"]
    assert {j["name"]: j["status"] for j in jobs} == dict.fromkeys(estimates, "ok")
    assert {j["name"]: j["memory_estimate"] for j in jobs} == estimates
    first, second = sorted(jobs, key=lambda j: j["began"])
    assert second["began"] >= first["began"] + first["seconds"], jobs
    for job in jobs:  # the worker's own peak during the job: TensorFlow's and the model's
        assert 0 < job["peak_memory"] < 4 * job["memory_estimate"], job
        said = f"peak {memory.shown(job['peak_memory'])} (est. " \
               f"{memory.shown(job['memory_estimate'])})"
        assert said in (folder / "dist" / "report.html").read_text()
        assert said in (folder / "dist" / "report.md").read_text()


def test_a_budget_smaller_than_one_job_is_one_line_before_any_work(two):
    folder, estimates = two
    done = batch(folder, "--jobs", "2", "--max-memory", "5M")
    assert done.returncode == ConfigError.exit_code, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    name, size = next(iter(estimates.items()))  # the first job of the manifest
    assert f": {name}: needs about {memory.shown(size)} " in lines[0], lines[0]
    assert "over --max-memory 5 MB" in lines[0], lines[0]
    assert not (folder / "dist").exists()


@pytest.mark.parametrize("text", ["0", "lots", "5X", "-1G"])
def test_a_size_that_is_not_one_is_a_usage_error(two, text):
    folder, _ = two
    done = batch(folder, "--max-memory", text)
    assert done.returncode == 2 and "--max-memory" in done.stderr, done.stderr
    assert not (folder / "dist").exists()


@pytest.mark.parametrize("text,size", [("512M", 512 << 20), ("1.5GB", 3 << 29),
                                       ("2GiB", 2 << 30), ("1048576", 1 << 20), ("64k", 1 << 16)])
def test_sizes_are_powers_of_1024(text, size):
    from graphfreeze.batch.cache_admin import parse_size

    assert parse_size(text) == size


def test_an_estimate_grows_with_the_weights_and_the_hungriest_target(two):
    """A checkpoint's weights are read off its index: more weights, more memory; a job asking
    for android beside server takes android's share."""
    import dataclasses

    from graphfreeze.convert import Request, prepare

    small = prepare(Request(source="iris", outputs=("probs",), targets=("server",)))
    both = prepare(dataclasses.replace(small.request, targets=("server", "android")))
    weights = small.source.weight_bytes("iris", small.source_options, ("probs",))
    assert 0 < weights and memory.estimate(small) > memory.WORKER_BYTES + weights
    assert memory.estimate(both) >= memory.estimate(small)
    assert memory.available() > 0


def test_ray_refuses_a_job_no_node_has_the_memory_for():
    """Ray would leave the task waiting forever: one line naming it, its estimate and the
    largest node's memory."""
    from graphfreeze.batch.executors.ray_executor import _has_memory

    class Cluster:  # what ray.nodes() says of two live nodes and a dead one
        @staticmethod
        def nodes():
            return [{"Alive": True, "Resources": {"memory": 2.0 * 2**30}},
                    {"Alive": True, "Resources": {"memory": 3.0 * 2**30}},
                    {"Alive": False, "Resources": {"memory": 64.0 * 2**30}}]

    _has_memory(Cluster, {"small": 3 << 30}, "--address x:1")
    with pytest.raises(ConfigError, match=r"^big: needs about 4\.0 GB \(estimated from its "
                                          r"model's size\), over the 3\.0 GB of memory the "
                                          r"largest node of the Ray cluster \(--address x:1\)"):
        _has_memory(Cluster, {"small": 1 << 30, "big": 4 << 30}, "--address x:1")
