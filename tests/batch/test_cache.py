"""The cache key covers what makes an artifact (custom-object code too), and an entry that is not
whole is never served."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from graphfreeze.batch.cache import Cache, Outcome, job_key
from graphfreeze.batch.jobs import prepare_jobs
from graphfreeze.batch.manifest import JobOptions, JobSpec
from graphfreeze.registry import Registry

FREEZE = str(Path(sys.executable).with_name("freeze"))


def _key(spec):
    """The cache key of `spec`'s job, prepared afresh (what it hashes is read now)."""
    (job,) = prepare_jobs([spec], Registry.default(plugins=False))
    return job_key(job)


def test_custom_object_code_is_in_the_key(other_samples, tmp_path, monkeypatch):
    module = tmp_path / "my_layers.py"
    module.write_text("SCALE = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = JobSpec("custom", str(other_samples / "custom.keras"),
                   JobOptions(source_options={"custom_objects": ("my_layers:Scale",)},
                              out_dir=str(tmp_path / "d")),
                   "m.toml:1")

    before = _key(spec)
    assert _key(spec) == before
    module.write_text("SCALE = 3.0\n")
    assert _key(spec) != before
    assert "my_layers" not in sys.modules  # found, hashed, never imported


def test_an_entry_naming_a_file_it_lacks_is_not_served(tmp_path):
    cache = Cache(str(tmp_path / "cache"))
    outcome = Outcome({"m.pb": b"graph", "m.pb.json": b"{}"}, [("android", "m.pb", "m.pb.json")])
    cache.store("ab" * 32, outcome)
    assert cache.load("ab" * 32) == outcome
    entry = tmp_path / "cache" / "ab" / ("ab" * 32) / "entry.json"
    record = json.loads(entry.read_text())
    del record["files"]["m.pb.json"]
    entry.write_text(json.dumps(record))
    assert cache.load("ab" * 32) is None
    assert cache.load("cd" * 32) is None  # another key: nothing


def _filled(folder, now):
    """Three entries of 1, 2 and 4 KB, last used 40, 10 and 0 days ago."""
    cache = Cache(str(folder))
    for n, (key, days) in enumerate((("a1" * 32, 40), ("b2" * 32, 10), ("c3" * 32, 0))):
        cache.store(key, Outcome({"m.pb": b"x" * (1024 << n), "m.pb.json": b"{}"},
                                 [("android", "m.pb", "m.pb.json")]), job=f"job{n}")
        entry = folder / key[:2] / key / "entry.json"
        os.utime(entry, (now - days * 86400, now - days * 86400))
    return cache


def _bytes(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_a_hit_marks_the_entry_used(tmp_path):
    now = time.time()
    cache = _filled(tmp_path / "cache", now)
    assert cache.load("a1" * 32) is not None
    assert os.path.getmtime(tmp_path / "cache" / "a1" / ("a1" * 32) / "entry.json") > now - 60


def test_ls_and_prune_local(tmp_path, freeze):
    from graphfreeze_cli.show import size

    folder = tmp_path / "cache"
    _filled(folder, time.time())
    listed = freeze("cache", "ls", folder)
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert [line.split()[:3] for line in lines[1:4]] == [
        ["a1a1a1a1a1a1", "job0", "android"], ["b2b2b2b2b2b2", "job1", "android"],
        ["c3c3c3c3c3c3", "job2", "android"]]  # least recently used first
    sizes = [_bytes(folder / k[:2] / k) for k in ("a1" * 32, "b2" * 32, "c3" * 32)]
    assert "(40 d ago)" in lines[1] and lines[-1] == f"3 entries, {size(sum(sizes))} in {folder}"
    dry = freeze("cache", "prune", folder, "--max-size", "7KB", "--dry-run")
    assert dry.output.splitlines() == [
        f"would remove {lines[1]}",
        f"would prune 1 entries ({size(sizes[0])}); 2 left, {size(sum(sizes[1:]))} in {folder}"]
    assert (folder / "a1").exists()
    old = freeze("cache", "prune", folder, "--older-than", "30d")
    assert old.exit_code == 0 and old.output.splitlines()[-1].startswith("pruned 1 entries")
    assert not (folder / "a1" / ("a1" * 32)).exists()
    small = freeze("cache", "prune", folder, "--max-size", "5KB")
    assert small.output.splitlines()[-1] == \
        f"pruned 1 entries ({size(sizes[1])}); 1 left, {size(sizes[2])} in {folder}"
    assert Cache(str(folder)).load("c3" * 32) is not None


@pytest.mark.parametrize("args, message", [
    (["--max-size", "10XB"], "--max-size 10XB: not a size; use e.g. 10GB, 500MB or 2048 (bytes)"),
    (["--max-size", "big"], "--max-size big: not a size; use e.g. 10GB, 500MB or 2048 (bytes)"),
    (["--older-than", "30"], "--older-than 30: not an age; use e.g. 30d, 12h, 2w or 90m"),
    (["--older-than", "a month"], "--older-than a month: not an age; use e.g. 30d, 12h, 2w or 90m"),
])
def test_unparsable_prune_limits_are_one_line(tmp_path, args, message):
    _filled(tmp_path / "cache", time.time())
    done = subprocess.run([FREEZE, "cache", "prune", str(tmp_path / "cache"), *args],
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (6, "", f"error: {message}\n")
    assert len(list((tmp_path / "cache").glob("*/*/entry.json"))) == 3


def test_unwritable_local_cache_is_one_line_before_any_conversion(samples, tmp_path):
    shutil.copytree(samples / "iris", tmp_path / "iris")
    (tmp_path / "blocked").write_text("a file\n")
    done = subprocess.run([FREEZE, "batch", "iris", "--outputs", "probs", "--cache",
                           "blocked/cache"], cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (4, ""), done.stderr
    assert done.stderr == ("error: --cache blocked/cache: blocked is a file, not a folder; "
                           "choose another --cache, or --no-cache\n")
    assert not (tmp_path / "dist").exists()


def _refuses_folders(parent: str) -> bool:
    """`parent` passes os.access for writing (root) but its file system refuses a new folder."""
    if not os.access(parent, os.W_OK | os.X_OK):
        return False
    probe = os.path.join(parent, ".gf-probe")
    try:
        os.mkdir(probe)
    except OSError:
        return True
    os.rmdir(probe)
    return False


@pytest.mark.skipif(not _refuses_folders("/sys/kernel"), reason="needs sysfs writable by access()")
def test_a_cache_folder_the_file_system_refuses_is_one_line(samples, tmp_path):
    """os.access trusts root; sysfs still refuses a folder: the cache was then silently off."""
    shutil.copytree(samples / "iris", tmp_path / "iris")
    done = subprocess.run([FREEZE, "batch", "iris", "--outputs", "probs", "--cache",
                           "/sys/kernel/gfcache"], cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (4, ""), done.stderr
    assert done.stderr.startswith("error: --cache /sys/kernel/gfcache: /sys/kernel is not "
                                  "writable (") and done.stderr.count("\n") == 1
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize("record", ["{}", '{"job": 5, "written": [["android"]]}', "[1]", "not json"])
def test_ls_shows_an_entry_json_that_is_not_one_as_incomplete(tmp_path, freeze, record):
    now = time.time()
    _filled(tmp_path / "cache", now)
    (tmp_path / "cache" / "a1" / ("a1" * 32) / "entry.json").write_text(record)
    result = freeze("cache", "ls", tmp_path / "cache")
    assert result.exit_code == 0, result.output
    assert "3 entries" in result.output or "2 entries, 7.9 KB (1 incomplete)" in result.output


def test_cache_flag_as_batch_takes_it(tmp_path, freeze, monkeypatch):
    """`freeze batch --cache DIR` then `freeze cache ls --cache DIR`: the same flag names it."""
    folder = tmp_path / "cache"
    _filled(folder, time.time())
    monkeypatch.chdir(tmp_path)  # relative, as typed
    by_flag = freeze("cache", "ls", "--cache", "cache")
    assert by_flag.exit_code == 0, by_flag.output
    assert by_flag.output == freeze("cache", "ls", "cache").output
    assert by_flag.output.splitlines()[-1].startswith("3 entries")
    pruned = freeze("cache", "prune", "--cache", "cache", "--older-than", "30d")
    assert pruned.exit_code == 0 and pruned.output.splitlines()[-1].startswith("pruned 1 entries")
    assert not (folder / "a1" / ("a1" * 32)).exists()
    both = freeze("cache", "ls", "cache", "--cache", "other")
    assert both.exit_code == 2 and "two caches named (cache and --cache other)" in both.output
    from graphfreeze_cli.batch import batch_command
    from graphfreeze_cli.cache import ls_command

    flag = [p for p in batch_command.params if p.name == "cache_dir"]
    assert [(p.opts, p.help) for p in flag] == \
        [(p.opts, p.help) for p in ls_command.params if p.name == "cache_dir"]


def test_every_cache_command_has_a_help_line(freeze):
    from graphfreeze_cli.cache import cache_command

    out = freeze("cache", "--help").output
    listed = out.split("Commands:")[1].splitlines()
    for name in cache_command.commands:
        (line,) = [line.split() for line in listed if line.split()[:1] == [name]]
        assert len(line) > 3, out


def test_prune_is_the_library_s(tmp_path):
    """The CLI only prints: cache_admin.prune chooses, removes, and says what it did."""
    from graphfreeze.batch import cache_admin

    folder = tmp_path / "cache"
    now = time.time()
    _filled(folder, now)
    seen = []
    dry = cache_admin.prune(str(folder), older_than=30 * 86400, dry_run=True, now=now,
                            on_gone=seen.append)
    assert [e.job for e in dry.gone] == [e.job for e in seen] == ["job0"]
    assert [e.job for e in dry.kept] == ["job1", "job2"]
    assert len(cache_admin.entries(str(folder))) == 3
    done = cache_admin.prune(str(folder), max_size=5 * 1024, now=now)
    assert [e.job for e in done.gone] == ["job0", "job1"] and [e.job for e in done.kept] == ["job2"]
    assert [e.job for e in cache_admin.entries(str(folder))] == ["job2"]


def _fake_distribution(folder: Path, name: str, version: str) -> Path:
    """A dist-info for `name` at `version` only (no modules): first on PYTHONPATH, it is what
    importlib.metadata reports as installed, as after `pip install --upgrade NAME`."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return folder


def test_upgrading_a_converter_converts_again(samples, tmp_path):
    """The cache key holds every distribution graphfreeze's extras declare (OpenVINO and its
    tokenizers were missing from a hand-kept list: after an upgrade the old IR was served)."""
    distribution = "openvino"
    shutil.copytree(samples / "iris", tmp_path / "iris")
    args = [FREEZE, "batch", "iris", "--outputs", "probs", "--target", "android", "--cache", "cache"]
    first = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True)
    again = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert again.stdout.split()[0] == "cached"
    upgraded = _fake_distribution(tmp_path / "upgraded", distribution, "2099.1")
    env = {**os.environ, "PYTHONPATH": f"{upgraded}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    after = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert after.returncode == 0, after.stderr
    assert after.stdout.split()[0] == "ok"  # converted again, not served from the cache


def test_the_key_names_every_declared_distribution_but_dev_tools():
    from graphfreeze.batch.cache import keyed_distributions

    keyed = keyed_distributions()
    assert {"graphfreeze", "tensorflow", "tf-keras", "keras", "openvino", "openvino-tokenizers",
            "tf2onnx", "onnx", "onnxruntime", "ai-edge-litert", "tensorflow-model-optimization",
            "keras-hub", "tensorflow-text"} <= set(keyed)
    assert not {"pytest", "ruff", "mkdocs"} & set(keyed)


def test_a_checkout_keys_what_its_pyproject_declares():
    """Run from a checkout (editable, or on PYTHONPATH with no metadata), the declaration is its
    own pyproject.toml: TensorFlow and every converter stay in the key."""
    from graphfreeze.batch.cache import _declared

    root = Path(__file__).resolve().parents[2]
    assert (root / "pyproject.toml").is_file()
    names = {requirement.split("=")[0].split(";")[0].strip() for requirement, _ in _declared()}
    assert {"tensorflow", "tf2onnx", "openvino", "openvino-tokenizers", "google-crc32c"} <= names


def test_a_web_runtime_upgrade_is_in_the_key(samples, tmp_path, monkeypatch):
    """The web targets' npm runtimes (their package.json versions) enter the key: an
    onnxruntime-web upgrade converts again."""
    modules = tmp_path / "node_modules"
    for package, version in (("onnxruntime-web", "1.30.0"), ("@litertjs/core", "2.5.3")):
        (modules / package).mkdir(parents=True)
        (modules / package / "package.json").write_text(json.dumps({"version": version}))
    monkeypatch.setenv("GRAPHFREEZE_WEB_RUNTIMES", str(modules))
    spec = JobSpec("iris", str(samples / "iris" / "model.ckpt-200"),
                   JobOptions(outputs=("probs",), targets=("web-onnx",), out_dir=str(tmp_path / "d")),
                   "m.toml:1")

    before = _key(spec)
    assert _key(spec) == before
    (modules / "onnxruntime-web" / "package.json").write_text(json.dumps({"version": "1.31.0"}))
    assert _key(spec) != before
