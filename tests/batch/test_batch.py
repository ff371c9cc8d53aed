"""`freeze batch` end to end on real models: a mixed manifest gives the bytes `freeze` alone
gives; a re-run is all cache hits without TensorFlow; a changed model or a damaged cache entry
is rebuilt alone; shards split jobs stably; a bad manifest is one line (exit 6) and writes
nothing; a corrupt model, a killed worker, a timeout and --fail-fast each touch only their job.

CLI runs are subprocesses (the real `freeze` script: plain lines, real exit codes); the Python
API, the worker kill and the timeout start-up check run in-process. TensorFlow starts once per
worker process, so runs are few and share one converted workspace (module-scoped)."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

FREEZE = str(Path(sys.executable).with_name("freeze"))

MANIFEST = """\
schema_version = 1

[defaults]
targets = ["android"]
out_dir = "dist"

[[model]]
source = "iris"
outputs = ["probs"]
targets = ["android", "tflite"]

[[model]]
source = "runs/*"
outputs = "probs"

[[model]]
name = "tf2"
source = "tf2_savedmodel"
targets = ["onnx"]

[[model]]
source = "model.keras"
targets = "tflite"
"""
# what `freeze` alone is given for each job: (source as spelled, --outputs, --target)
JOBS = {
    "iris": ("iris", "probs", "android,tflite"),
    "cnn_v2": ("runs/cnn_v2", "probs", "android"),
    "iris_partitioned": ("runs/iris_partitioned", "probs", "android"),
    "tf2": ("tf2_savedmodel", None, "onnx"),
    "model": ("model.keras", None, "tflite"),
}
ORDER = list(JOBS)  # the manifest's order (the glob's matches sorted)
HEAVY = {"tensorflow", "keras", "tf_keras", "tf2onnx", "onnx", "onnxruntime", "ray"}


def cli(cwd: Path, *args, timeout: float = 600) -> subprocess.CompletedProcess:
    """`freeze ARGS` in a subprocess run in `cwd`."""
    start = time.monotonic()
    done = subprocess.run([FREEZE, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    print(f"freeze {' '.join(map(str, args))}: {time.monotonic() - start:.1f} s")
    return done


def digests(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under folder."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def report_of(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())


def statuses(report: dict) -> dict[str, str]:
    return {job["name"]: job["status"] for job in report["jobs"]}


def clone(workspace: Path, tmp_path: Path) -> Path:
    """A copy of the converted workspace (models, manifest, dist/, cache/) a test may change."""
    dest = tmp_path / "ws"
    shutil.copytree(workspace, dest)
    return dest


def cache_entry(ws: Path, artifact_name: str) -> Path:
    """The newest cache entry whose job wrote `artifact_name` (found by content, not by key:
    entries of older graphfreeze code may be there too)."""
    return max((p for p in (ws / "cache").glob("*/*/entry.json")
                if any(w[1] == artifact_name for w in json.loads(p.read_text())["written"])),
               key=lambda p: p.stat().st_mtime_ns).parent


def warm(ws: Path) -> None:
    """Bring the workspace's cache up to date (all hits unless graphfreeze's own code changed
    since it was filled: its digest is part of every key)."""
    done = cli(ws, "batch", "models.toml", "--jobs", "2", "--cache", "cache")
    assert done.returncode == 0, done.stderr


def put(folder: Path, samples: Path, *names: str) -> None:
    for name in names:
        shutil.copytree(samples / name, folder / name)


def random_pb(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(3000))


def truncated(samples: Path, dest: Path) -> None:
    """The iris checkpoint with its data shard cut in half."""
    shutil.copytree(samples / "iris", dest)
    shard = dest / "model.ckpt-200.data-00000-of-00001"
    data = shard.read_bytes()
    shard.write_bytes(data[:len(data) // 2])


# -- one mixed manifest, converted once ------------------------------------------------------------

@pytest.fixture(scope="module")
def workspace(samples, other_samples, tmp_path_factory):
    """(folder, CompletedProcess): the mixed manifest converted with --jobs 2 into dist/, the
    cache in cache/ (both relative to the folder)."""
    ws = tmp_path_factory.mktemp("batch")
    put(ws, samples, "iris")
    put(ws / "runs", samples, "iris_partitioned", "cnn_v2")
    put(ws, other_samples, "tf2_savedmodel")
    shutil.copy(other_samples / "model.keras", ws / "model.keras")
    (ws / "models.toml").write_text(MANIFEST)
    return ws, cli(ws, "batch", "models.toml", "--jobs", "2", "--cache", "cache")


def test_mixed_manifest_writes_verified_artifacts_and_reports(workspace):
    ws, done = workspace
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 7, done.stdout
    assert sorted(line.split()[1] for line in lines[:5]) == sorted(ORDER)
    assert all(line.split()[0] == "ok" for line in lines[:5]), done.stdout
    assert lines[5].startswith("5 ok, 0 cached, 0 failed in ")
    assert lines[6] == "reports: dist/report.html, dist/junit.xml, dist/report.json"

    report = report_of(ws / "dist")
    assert report["counts"] == {"ok": 5, "cached": 0, "failed": 0, "timed-out": 0, "not-run": 0}
    assert [job["name"] for job in report["jobs"]] == ORDER
    for job in report["jobs"]:
        source, _, targets = JOBS[job["name"]]
        assert (job["source"], job["status"], job["attempts"], job["error"], job["exit_code"]) \
            == (source, "ok", 1, None, 0)
        assert [a["target"] for a in job["artifacts"]] == targets.split(",")
        for artifact in job["artifacts"]:
            path = ws / artifact["path"]
            assert path.parent == ws / "dist" / job["name"]
            data = path.read_bytes()
            sidecar = json.loads((ws / artifact["sidecar_path"]).read_text())
            assert artifact["sidecar_path"] == artifact["path"] + ".json"
            assert sidecar == artifact["sidecar"]
            assert sidecar["sha256"] == artifact["sha256"] == hashlib.sha256(data).hexdigest()
            assert sidecar["bytes"] == artifact["bytes"] == len(data)
            assert sidecar["target"] == artifact["target"]
            assert sidecar["source"]["path"] == source
            assert sidecar["verification"]["passed"] is True

    root = ET.parse(ws / "dist" / "junit.xml").getroot()
    cases = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert cases == [(name, t) for name in ORDER for t in JOBS[name][2].split(",")]
    assert (root.get("tests"), root.get("failures")) == ("6", "0")
    assert root.find(".//failure") is None
    page = (ws / "dist" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and all(f"<td>{name}</td>" in page for name in ORDER)
    assert sorted(os.listdir(ws / "dist")) == sorted([*ORDER, "junit.xml", "report.html",
                                                       "report.json"])


def test_artifacts_are_byte_identical_to_freeze_alone(workspace, freeze, monkeypatch):
    ws, done = workspace
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(ws)  # the same cwd and source spelling as the batch
    for name, (source, outputs, targets) in JOBS.items():
        args = [source, "--target", targets, "-o", f"alone/{name}/"]
        result = freeze(*args, *(["--outputs", outputs] if outputs else []))
        assert result.exit_code == 0, result.output
        assert digests(ws / "alone" / name) == digests(ws / "dist" / name), name


CHECK_IMPORTS = """
import sys
from graphfreeze_cli.main import main
try:
    main(sys.argv[1:])
finally:
    heavy = sorted({m.split(".")[0] for m in sys.modules} & HEAVY)
    print("heavy modules: " + ",".join(heavy), file=sys.stderr)
"""


def test_rerun_unchanged_is_all_cached_without_tensorflow(workspace, tmp_path):
    """An unchanged re-run: every job from the cache, no TensorFlow imported (its time is
    bench/bench_batch.py's `cache` part, not asserted here)."""
    ws = clone(workspace[0], tmp_path)
    warm(ws)
    shutil.rmtree(ws / "dist")  # the artifacts come back from the cache
    code = f"HEAVY = set({sorted(HEAVY)!r})\n" + CHECK_IMPORTS
    done = subprocess.run([sys.executable, "-c", code, "batch", "models.toml", "--jobs", "2",
                           "--cache", "cache"], cwd=ws, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "heavy modules: ", done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()[:5]] == ["cached"] * 5
    assert statuses(report_of(ws / "dist")) == dict.fromkeys(ORDER, "cached")
    for name in ORDER:
        assert digests(ws / "dist" / name) == digests(workspace[0] / "dist" / name), name


# -- a changed model and a damaged cache entry: rebuilt, alone ------------------------------------

def stored(entry: Path) -> dict:
    """A cache entry's files' digests, entry.json's record but the time the job took to make."""
    files = digests(entry)
    record = json.loads((entry / "entry.json").read_text())
    record.pop("seconds", None)
    return {**files, "entry.json": record}


@pytest.fixture(scope="module")
def rebuilt(workspace, tmp_path_factory):
    """The workspace with one model changed (runs/iris_partitioned's .meta gains an unknown
    protobuf field: other bytes, the same graph) and one cache entry damaged (a byte of the
    keras job's model.tflite flipped), then run again: (folder, CompletedProcess, entry, entry's
    files before the damage)."""
    ws = clone(workspace[0], tmp_path_factory.mktemp("rebuilt"))
    warm(ws)
    meta = ws / "runs" / "iris_partitioned" / "model.ckpt-200.meta"
    meta.write_bytes(meta.read_bytes() + b"\xc0\x3e\x01")  # field 1000 = 1 (varint)
    entry = cache_entry(ws, "model.tflite")
    before = stored(entry)
    damaged = entry / "files" / "model.tflite"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0x01
    damaged.write_bytes(bytes(data))
    return ws, cli(ws, "batch", "models.toml", "--jobs", "1", "--cache", "cache"), entry, before


def test_changed_model_alone_is_rebuilt(rebuilt, workspace):
    ws, done, _, _ = rebuilt
    assert done.returncode == 0, done.stderr
    report = report_of(ws / "dist")
    assert statuses(report)["iris_partitioned"] == "ok"
    assert {n: s for n, s in statuses(report).items() if n not in ("iris_partitioned", "model")} \
        == {"iris": "cached", "cnn_v2": "cached", "tf2": "cached"}
    # the unknown field changes no node: the rebuilt artifacts are the same bytes
    assert digests(ws / "dist" / "iris_partitioned") == \
        digests(workspace[0] / "dist" / "iris_partitioned")


def test_damaged_cache_entry_is_rebuilt_never_served(rebuilt, workspace):
    from graphfreeze.batch.cache import Cache

    ws, done, entry, before = rebuilt
    assert done.returncode == 0, done.stderr
    assert statuses(report_of(ws / "dist"))["model"] == "ok"
    assert digests(ws / "dist" / "model") == digests(workspace[0] / "dist" / "model")
    assert stored(entry) == before  # rewritten whole: every file as first stored
    assert not [p for p in (ws / "cache").rglob("*") if p.name.endswith(".tmp")]  # temporaries
    assert Cache(str(ws / "cache")).load(entry.name) is not None


# -- shards ---------------------------------------------------------------------------------------

def test_shards_split_all_jobs_stably(workspace, tmp_path, monkeypatch):
    from graphfreeze.batch import run as batch_run

    ws = clone(workspace[0], tmp_path)
    monkeypatch.chdir(ws)
    header, *models = MANIFEST.split("[[model]]\n")
    (ws / "reordered.toml").write_text(header + "".join(f"[[model]]\n{m}\n"
                                                         for m in reversed(models)))
    batch_run("models.toml", cache="cache")  # the cache up to date, as warm() does
    split = {}
    for manifest in ("models.toml", "reordered.toml"):
        shards = [batch_run(manifest, cache="cache", shard=f"{k}/3") for k in (1, 2, 3)]
        for k, report in enumerate(shards, 1):
            assert report.shard == f"{k}/3" and report.skipped == 5 - len(report.jobs)
            assert all(job.status == "cached" for job in report.jobs), report.jobs
        split[manifest] = [sorted(job.name for job in report.jobs) for report in shards]
    names = [name for shard in split["models.toml"] for name in shard]
    assert sorted(names) == sorted(ORDER)  # every job once: no gap, no overlap
    assert split["reordered.toml"] == split["models.toml"]


@pytest.mark.parametrize("shard", ["3/2", "0/3", "1", "²/4"])
def test_bad_shard_is_one_line(workspace, tmp_path, shard):
    ws = clone(workspace[0], tmp_path)
    before = (ws / "dist" / "report.json").stat().st_mtime_ns
    done = cli(ws, "batch", "models.toml", "--cache", "cache", "--shard", shard)
    assert done.returncode == 2 and done.stdout == ""  # a usage error, as --jobs 0 is
    assert done.stderr.endswith(f"Error: Invalid value for --shard: '{shard}': write it as K/N "
                                "with 1 <= K <= N, e.g. 1/4\n")
    assert (ws / "dist" / "report.json").stat().st_mtime_ns == before


def test_reports_go_to_the_manifest_out_dir_when_no_job_made_artifacts(samples, tmp_path):
    from graphfreeze.batch.shards import in_shard

    put(tmp_path, samples, "iris")
    (tmp_path / "models.toml").write_text('schema_version = 1\n[defaults]\nout_dir = "out"\n'
                                          '[[model]]\nsource = "iris"\noutputs = "probs"\n')
    empty = next(k for k in (1, 2) if not in_shard("iris", (k, 2)))
    done = cli(tmp_path, "batch", "models.toml", "--no-cache", "--shard", f"{empty}/2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == \
        "reports: out/report.html, out/junit.xml, out/report.json"
    assert not (tmp_path / "dist").exists()


# -- a bad manifest: one line naming models.toml:LINE, exit 6, nothing written ---------------------

BAD = {
    "typo'd key": ('schema_version = 1\n\n[[model]]\nsource = "iris"\nouputs = ["probs"]\n',
                   "models.toml:5: unknown key 'ouputs' in [[model]]; did you mean outputs?"),
    "missing source": ('schema_version = 1\n\n[[model]]\nsource = "irsi"\n',
                       "models.toml:4: source irsi does not exist"),
    "glob matching nothing": ('schema_version = 1\n\n[[model]]\nsource = "runs/*"\n',
                              "models.toml:4: source glob runs/* matches nothing"),
    "two jobs, one name": ('schema_version = 1\n\n[[model]]\nname = "m"\nsource = "iris"\n\n'
                           '[[model]]\nname = "m"\nsource = "iris"\noutputs = "probs"\n',
                           "models.toml:7: job name 'm' is also used at models.toml:3"),
    "a glob's derived names clash with a given one": (
        'schema_version = 1\n\n[[model]]\nname = "iris"\nsource = "iris"\n\n'
        '[[model]]\nsource = "i*"\n', "models.toml:7: job name 'iris' is also used at "
                                      "models.toml:3"),
    "calibration data that is not there": (
        'schema_version = 1\n\n[[model]]\nsource = "iris"\noutputs = "probs"\ntargets = "edge-int8"\n'
        'calibration = "calib/images"\n', "models.toml:7: calibration calib/images does not exist; fix "
                                         "the path (relative to the manifest's folder)"),
    "calibration data that is not there, in a target's options": (
        'schema_version = 1\n\n[[model]]\nsource = "iris"\noutputs = "probs"\n'
        '[model.target_options.edge-int8]\ncalibration = "calib"\n',
        "models.toml:3: calibration calib does not exist"),
    "golden outputs that are not there, in [defaults]": (
        'schema_version = 1\n[defaults]\ngolden = "golden"\n\n[[model]]\nsource = "iris"\n',
        "models.toml:3: golden golden does not exist"),
    "no schema_version": ('[[model]]\nsource = "iris"\n', "models.toml:1: schema_version must be"),
    "unknown target": ('schema_version = 1\n[defaults]\ntargets = "andriod"\n\n[[model]]\n'
                       'source = "iris"\n', "models.toml:5: iris: unknown target 'andriod'; did "
                                             "you mean android?"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_manifest_is_one_line_and_writes_nothing(samples, tmp_path, case):
    text, message = BAD[case]
    put(tmp_path, samples, "iris")
    (tmp_path / "models.toml").write_text(text)
    done = cli(tmp_path, "batch", "models.toml", "--cache", "cache")
    assert done.returncode == 6, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {message}"), done.stderr
    assert sorted(os.listdir(tmp_path)) == ["iris", "models.toml"]


def _prepare(folder: Path, text: str):
    from graphfreeze.batch.jobs import prepare_jobs
    from graphfreeze.batch.manifest import parse_manifest
    from graphfreeze.registry import Registry

    (folder / "models.toml").write_text(text)
    registry = Registry.default()
    return prepare_jobs(parse_manifest("models.toml", registry), registry)


def test_a_name_cannot_leave_out_dir(samples, tmp_path, monkeypatch):
    from graphfreeze.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    put(tmp_path, samples, "iris")
    with pytest.raises(ConfigError, match=r"^models\.toml:3: "):
        _prepare(tmp_path, 'schema_version = 1\n[[model]]\nname = ".."\nsource = "iris"\n')


def test_two_jobs_writing_one_output_are_refused(samples, tmp_path, monkeypatch):
    from graphfreeze.batch.jobs import prepare_jobs
    from graphfreeze.batch.manifest import JobOptions, JobSpec
    from graphfreeze.errors import ConfigError
    from graphfreeze.registry import Registry

    monkeypatch.chdir(tmp_path)
    put(tmp_path, samples, "iris")
    specs = [JobSpec("m", "iris", JobOptions(outputs=("probs",), out_dir=out_dir), where)
             for out_dir, where in (("dist", "a.toml:3"), ("dist/.", "b.toml:7"))]
    with pytest.raises(ConfigError, match=r"^b\.toml:7: m writes .*dist/m/model.ckpt-200.pb, as "
                                          r"m \(a\.toml:3\) does"):
        prepare_jobs(specs, Registry.default(plugins=False))


@pytest.mark.parametrize("how", ["a regular file", "a read-only mount"])
def test_unwritable_out_dir_is_one_line_and_writes_nothing(samples, tmp_path, mount, how):
    work = tmp_path / "work"
    put(work, samples, "iris")
    if how == "a regular file":
        out, why = work / "blocked", "is a file, not a directory"
        out.write_text("not a folder\n")
    else:
        empty = tmp_path / "empty"
        empty.mkdir()
        out, why = mount(f"--bind {empty}", "-o remount,bind,ro"), "is on a read-only file system"
    (work / "models.toml").write_text(f'schema_version = 1\n[defaults]\nout_dir = "{out}"\n\n'
                                      '[[model]]\nsource = "iris"\noutputs = "probs"\n')
    before = digests(tmp_path)
    done = cli(work, "batch", "models.toml", "--cache", "cache")
    assert done.returncode == 6, done.stderr  # found before any job runs
    what = "" if how == "a regular file" else "directory "
    assert done.stdout == "" and done.stderr == (
        f"error: models.toml:5: iris: {out}/iris/model.ckpt-200.pb: {what}{out} {why}; "
        "choose another output\n")
    assert digests(tmp_path) == before and not (work / "cache").exists()


def test_path_mode_messages_name_no_manifest(samples, tmp_path):
    """`freeze batch PATH...` has no manifest: its refusals do not send the user to one."""
    put(tmp_path, samples, "iris")
    done = cli(tmp_path, "batch", "nope", "--outputs", "probs")
    assert (done.returncode, done.stderr) == (6, "error: command line: source nope does not "
                                                 "exist; fix the path\n")
    done = cli(tmp_path, "batch", "iris", "iris/", "--outputs", "probs")
    assert done.returncode == 6 and done.stderr.endswith(
        "give each model once, or a manifest that names them\n"), done.stderr


def test_a_report_folder_that_cannot_be_written_is_refused_before_any_job(samples, tmp_path):
    work = tmp_path / "work"
    put(work, samples, "iris")
    (work / "afile").write_text("not a folder\n")
    (work / "models.toml").write_text('schema_version = 1\n[[model]]\nsource = "iris"\n'
                                      'outputs = "probs"\n')
    done = cli(work, "batch", "models.toml", "--no-cache", "--report", "afile/reports")
    assert done.returncode == 4, done.stderr
    assert done.stderr == ("error: afile/reports/report.json: afile is a file, not a directory; "
                           "choose another --report\n")
    assert not (work / "dist").exists()


# -- paths with shared options; a corrupt model among good ones ------------------------------------

@pytest.fixture(scope="module")
def with_corrupt(samples, tmp_path_factory):
    """`freeze batch iris trunc bad.pb iris_resource --outputs probs --target android`: trunc's
    data shard is cut in half, bad.pb is random bytes."""
    folder = tmp_path_factory.mktemp("corrupt")
    put(folder, samples, "iris", "iris_resource")
    truncated(samples, folder / "trunc")
    random_pb(folder / "bad.pb")
    done = cli(folder, "batch", "iris", "trunc", "bad.pb", "iris_resource", "--outputs", "probs",
               "--target", "android", "--jobs", "1", "--no-cache")
    return folder, done


def test_paths_with_shared_options_and_a_corrupt_model_among_good_ones(with_corrupt):
    folder, done = with_corrupt
    assert done.returncode == 7, done.stderr
    report = report_of(folder / "dist")
    assert statuses(report) == {"iris": "ok", "trunc": "failed", "bad": "failed",
                                "iris_resource": "ok"}
    jobs = {job["name"]: job for job in report["jobs"]}
    for name in ("iris", "iris_resource"):
        (artifact,) = jobs[name]["artifacts"]
        assert artifact["path"] == f"dist/{name}/model.ckpt-200.pb"
        assert artifact["target"] == "android"
        assert [o["node"] for o in artifact["sidecar"]["outputs"]] == ["probs"]
        assert artifact["sidecar"]["verification"]["passed"] is True
    assert "trunc/model.ckpt-200.data" in jobs["trunc"]["error"]
    assert "bad.pb: not a binary GraphDef" in jobs["bad"]["error"]
    for name in ("trunc", "bad"):
        job = jobs[name]
        assert "\n" not in job["error"] and job["artifacts"] == []
        assert (job["exit_code"], job["attempts"]) == (3, 1)
    failures = {c.get("classname"): c.find("failure")
                for c in ET.parse(folder / "dist" / "junit.xml").getroot().iter("testcase")}
    assert failures["iris"] is None and failures["iris_resource"] is None
    for name in ("trunc", "bad"):
        assert failures[name].get("message") == jobs[name]["error"]
        assert failures[name].get("type") == "exit 3"
    assert sorted(os.listdir(folder / "dist")) == ["iris", "iris_resource", "junit.xml",
                                                   "report.html", "report.json"]
    assert done.stdout.splitlines()[-2].startswith("2 ok, 0 cached, 2 failed in ")


def test_failed_line_says_error_once(with_corrupt):
    _, done = with_corrupt
    (line,) = [line for line in done.stdout.splitlines() if line.split()[:2] == ["FAILED", "bad"]]
    assert "error: bad.pb: not a binary GraphDef" in line and "error: error:" not in line


def test_path_mode_splits_comma_separated_outputs(monkeypatch):
    from graphfreeze_cli import batch as batch_cli

    seen = {}

    def fake_batch(manifest, paths, shared, *rest):
        from graphfreeze.batch.manifest import specs_from_paths
        from graphfreeze.registry import Registry

        seen["outputs"] = specs_from_paths(paths, shared, Registry.default())[0].options.outputs

    monkeypatch.setattr(batch_cli, "_batch", fake_batch)
    from click.testing import CliRunner

    CliRunner().invoke(batch_cli.batch_command, [__file__, "--outputs", "probs,classes"],
                       catch_exceptions=False)
    assert seen["outputs"] == ("probs", "classes")


def test_fail_fast_stops_at_the_first_failure(samples, tmp_path):
    put(tmp_path, samples, "cnn_v1", "iris", "iris_resource")
    done = cli(tmp_path, "batch", "cnn_v1", "iris", "iris_resource", "--outputs", "probs",
               "--target", "android,tflite,onnx,server", "--jobs", "1", "--timeout", "0.02", "--fail-fast",
               "--no-cache")
    assert done.returncode == 7, done.stderr
    report = report_of(tmp_path / "dist")
    jobs = {job["name"]: job for job in report["jobs"]}
    assert jobs["cnn_v1"]["status"] == "timed-out"  # the first failure stopped the rest
    assert {n: j["status"] for n, j in jobs.items() if n != "cnn_v1"} == dict.fromkeys(
        ("iris", "iris_resource"), "not-run")
    assert {n: j["error"] for n, j in jobs.items() if n != "cnn_v1"} == dict.fromkeys(
        ("iris", "iris_resource"), "not run: --fail-fast stopped the batch at an earlier failure")
    assert sorted(os.listdir(tmp_path / "dist")) == ["junit.xml", "report.html", "report.json"]


# -- workers: killed mid-job, timed out ------------------------------------------------------------

def test_worker_killed_mid_job_is_retried_once(samples, tmp_path, monkeypatch):
    from graphfreeze.batch import run as batch_run

    put(tmp_path, samples, "cnn_v1", "iris")
    (tmp_path / "models.toml").write_text(
        'schema_version = 1\n[defaults]\noutputs = "probs"\n'
        '[[model]]\nsource = "cnn_v1"\ntargets = ["android", "tflite"]\n'
        '[[model]]\nsource = "iris"\n')
    staging = tmp_path / "tmp"  # where workers make their graphfreeze-job-* staging folders
    staging.mkdir()
    monkeypatch.setenv("TMPDIR", str(staging))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.chdir(tmp_path)
    killed, stop = [], threading.Event()

    def kill_once_converting() -> None:
        # --jobs 1: one worker; the first staging folder is the first job's (cnn_v1) and is
        # there while it converts (the worker's TensorFlow import is over by then)
        try:
            while not stop.is_set():
                if any(staging.rglob("graphfreeze-job-*")):
                    (worker,) = multiprocessing.active_children()
                    os.kill(worker.pid, signal.SIGKILL)
                    killed.append(worker.pid)
                    return
                time.sleep(0.01)
        except Exception as err:  # noqa: BLE001 -- shown by the assertion below
            killed.append(err)

    killer = threading.Thread(target=kill_once_converting, daemon=True)
    killer.start()
    start = time.monotonic()
    try:
        report = batch_run("models.toml", jobs=1, cache=None)
    finally:
        stop.set()
        killer.join()
    print(f"killed-worker run: {time.monotonic() - start:.1f} s")
    assert len(killed) == 1 and isinstance(killed[0], int), killed
    cnn, iris = report.jobs
    assert (cnn.name, cnn.status, cnn.attempts) == ("cnn_v1", "ok", 2), cnn.error
    assert (iris.name, iris.status, iris.attempts) == ("iris", "ok", 1), iris.error
    assert [a.target for a in cnn.artifacts] == ["android", "tflite"]
    for artifact in (*cnn.artifacts, *iris.artifacts):
        assert hashlib.sha256(Path(artifact.path).read_bytes()).hexdigest() == artifact.sha256
        assert artifact.sidecar["verification"]["passed"] is True
    assert os.listdir(staging) == []  # what the killed worker left was removed


def test_timeout_fails_the_job(samples, tmp_path):
    """The killed worker's staging folder and TensorFlow's temporary files are removed, and so
    are the artifacts an earlier run left in the job's folder (a CI upload must not ship them)."""
    put(tmp_path, samples, "cnn_v1")
    earlier = tmp_path / "dist" / "cnn_v1"
    earlier.mkdir(parents=True)
    for name in ("model.ckpt-200.pb", "model.ckpt-200.onnx"):  # onnx: a target since dropped
        (earlier / name).write_bytes(b"an earlier run's")
        (earlier / f"{name}.json").write_text(json.dumps({"file": name,
                                                          "graphfreeze_version": "0.1.0"}))
    staging = tmp_path / "tmp"
    staging.mkdir()
    done = subprocess.run([FREEZE, "batch", "cnn_v1", "--outputs", "probs", "--target",
                           "android,tflite", "--jobs", "1", "--timeout", "0.02", "--no-cache"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(staging)})
    assert done.returncode == 7, done.stderr
    (job,) = report_of(tmp_path / "dist")["jobs"]
    assert job["status"] == "timed-out" and "timed out after 0.02 s" in job["error"]
    assert job["exit_code"] == 3 and job["artifacts"] == []
    assert len(job["details"]["removed_stale"]) == 4
    assert "(removed 4 stale file(s) of an earlier run)" in done.stdout
    assert not earlier.exists()
    assert os.listdir(staging) == []


def test_ctrl_c_stops_workers_and_leaves_no_temporary_files(samples, tmp_path):
    """SIGINT while a worker converts: exit 130, the workers gone, their staging folders and
    TensorFlow's temporary files removed (all under TMPDIR)."""
    put(tmp_path, samples, "cnn_v1", "iris")
    staging = tmp_path / "tmp"
    staging.mkdir()
    run = subprocess.Popen([FREEZE, "batch", "cnn_v1", "iris", "--outputs", "probs", "--target",
                            "android,onnx", "--jobs", "2", "--no-cache"], cwd=tmp_path,
                           env={**os.environ, "TMPDIR": str(staging)}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while run.poll() is None and not any(staging.rglob("graphfreeze-job-*")):
        assert time.monotonic() < deadline, "no job started"
        time.sleep(0.01)
    workers = [int(pid) for pid in subprocess.run(["pgrep", "-P", str(run.pid), "-f",
                                                   "spawn_main"],
                                                  capture_output=True, text=True).stdout.split()]
    assert run.poll() is None and workers, "the batch ended before Ctrl-C"
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert "interrupted" in err and "(interrupted)" in out
    assert os.listdir(staging) == []
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", f"worker {pid} left running"


SLOW_START = """\
import os
import time

if os.environ.get("GRAPHFREEZE_TEST_START_DELAY"):
    time.sleep(float(os.environ["GRAPHFREEZE_TEST_START_DELAY"]))
"""


def test_timeout_does_not_count_worker_start_up(samples, tmp_path, monkeypatch):
    from graphfreeze.batch import run as batch_run

    site = tmp_path / "site"  # workers (spawned) start 5 s slower
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_START)
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(site) + (os.pathsep + path if path else ""))
    monkeypatch.setenv("GRAPHFREEZE_TEST_START_DELAY", "5")
    put(tmp_path, samples, "iris")
    (tmp_path / "models.toml").write_text('schema_version = 1\n[[model]]\nsource = "iris"\n'
                                          'outputs = "probs"\n')
    monkeypatch.chdir(tmp_path)
    (job,) = batch_run("models.toml", jobs=1, cache=None, timeout=4).jobs
    assert job.status == "ok", job.error  # iris converts in ~1 s once its worker is up


# -- the Python API -------------------------------------------------------------------------------

def test_python_api_returns_the_report(workspace, tmp_path, monkeypatch):
    from graphfreeze.batch import run as batch_run  # what graphfreeze.batch.run calls
    from graphfreeze.batch.results import Report

    ws = clone(workspace[0], tmp_path)
    monkeypatch.chdir(ws)
    batch_run("models.toml", cache="cache")  # the cache up to date, as warm() does
    shutil.rmtree(ws / "dist")
    seen = []
    report = batch_run("models.toml", cache="cache", on_result=seen.append)
    assert isinstance(report, Report)
    assert [job.name for job in report.jobs] == ORDER and seen == list(report.jobs)
    assert report.counts() == {"ok": 0, "cached": 5, "failed": 0, "timed-out": 0, "not-run": 0} \
        and not report.failed
    for job in report.jobs:
        for artifact in job.artifacts:
            assert hashlib.sha256(Path(artifact.path).read_bytes()).hexdigest() == artifact.sha256
    # paths with shared options: the glob's jobs again, the same cache keys as in the manifest
    by_paths = batch_run(paths=["runs/*"], options={"outputs": ["probs"], "out_dir": "api"},
                         cache="cache")
    assert [(j.name, j.status) for j in by_paths.jobs] == [("cnn_v2", "cached"),
                                                           ("iris_partitioned", "cached")]
    for name in ("cnn_v2", "iris_partitioned"):
        assert digests(ws / "api" / name) == digests(workspace[0] / "dist" / name)


def test_graphfreeze_batch_run_can_be_called_twice(workspace, tmp_path, monkeypatch):
    import graphfreeze.batch
    from graphfreeze.batch.results import Report

    ws = clone(workspace[0], tmp_path)
    monkeypatch.chdir(ws)
    for _ in range(2):
        assert isinstance(graphfreeze.batch.run("models.toml", cache="cache"), Report)


@pytest.mark.parametrize("flag,value", [("--jobs", "0"), ("--jobs", "-1"), ("--timeout", "0")])
def test_jobs_and_timeout_out_of_range_are_usage_errors(flag, value):
    from click.testing import CliRunner
    from graphfreeze_cli.batch import batch_command

    result = CliRunner().invoke(batch_command, ["models.toml", flag, value])
    assert result.exit_code == 2 and "is not in the range" in result.output
