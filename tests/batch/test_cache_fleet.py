"""One gs:// cache for a fleet of CI machines, on the GCS emulator (tests/gcs_emulator.py, on
127.0.0.1): two `freeze batch` runs on two "machines" (processes with their own TMPDIR, HOME and
working folder) fill one cache at once; a third machine's run is all hits without TensorFlow;
concurrent writers and readers never see a torn or mixed entry; a damaged or half-published
entry is rebuilt and published again; a cache that cannot be written is one line before any
conversion; `freeze cache ls/prune` on gs://."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.gcs_emulator import GcsEmulator

FREEZE = str(Path(sys.executable).with_name("freeze"))
HEAVY = {"tensorflow", "keras", "tf_keras", "tf2onnx", "onnx", "onnxruntime", "ray"}
CACHE = "gs://bucket/fleet"
MANIFEST = """\
schema_version = 1
[defaults]
out_dir = "dist"
[[model]]
source = "iris"
outputs = ["probs"]
targets = ["android", "server"]
"""
CHECK_IMPORTS = f"""
import sys
from graphfreeze_cli.main import main
try:
    main(sys.argv[1:])
finally:
    heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({sorted(HEAVY)!r}))
    print("heavy modules: " + ",".join(heavy), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    with GcsEmulator(tmp_path_factory.mktemp("gcs")) as emulator:
        emulator.create_bucket("bucket")
        yield emulator


def machine(root: Path, name: str, samples: Path) -> tuple[Path, dict]:
    """(working folder, environment) of a fresh machine: its own copy of the model and manifest,
    TMPDIR and HOME."""
    folder = root / name
    shutil.copytree(samples / "iris", folder / "work" / "iris")
    (folder / "work" / "models.toml").write_text(MANIFEST)
    for sub in ("tmp", "home"):
        (folder / sub).mkdir()
    return folder / "work", {"TMPDIR": str(folder / "tmp"), "HOME": str(folder / "home")}


def start(gcs, work: Path, env: dict, *args: str, python: bool = False) -> subprocess.Popen:
    full = {k: v for k, v in gcs.env().items() if k != "XDG_CACHE_HOME"}
    cmd = [sys.executable, "-c", CHECK_IMPORTS] if python else [FREEZE]
    return subprocess.Popen([*cmd, *args], cwd=work, env={**full, **env, "TF_CPP_MIN_LOG_LEVEL": "3"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def status(work: Path) -> str:
    return json.loads((work / "dist" / "report.json").read_text())["jobs"][0]["status"]


@pytest.fixture(scope="module")
def fleet(gcs, samples, tmp_path_factory):
    """Two machines' first runs at once on an empty cache: (root, [(work, code, out, err)])."""
    root = tmp_path_factory.mktemp("fleet")
    machines = [machine(root, name, samples) for name in ("a", "b")]
    procs = [start(gcs, work, env, "batch", "models.toml", "--jobs", "1", "--cache", CACHE)
             for work, env in machines]
    return root, [(work, *finish(p)) for (work, _), p in zip(machines, procs, strict=True)]


def test_two_machines_fill_one_cache_then_a_third_hits_without_tensorflow(fleet, gcs, samples):
    root, runs = fleet
    for work, code, _, err in runs:
        assert code == 0, err
        assert status(work) in ("ok", "cached")
    assert digests(runs[0][0] / "dist" / "iris") == digests(runs[1][0] / "dist" / "iris")
    entries = [n for n in gcs.objects("bucket", "fleet/") if n.endswith("/entry.json")]
    assert len(entries) == 1  # one key, published by both (the same bytes) or by one
    work, env = machine(root, "c", samples)
    began = time.monotonic()
    code, out, err = finish(start(gcs, work, env, "batch", "models.toml", "--cache", CACHE,
                                  python=True))
    print(f"third machine, all hits: {time.monotonic() - began:.2f} s")
    assert code == 0, err
    assert err.splitlines()[-1] == "heavy modules: ", err
    assert out.split()[0] == "cached" and status(work) == "cached"
    assert digests(work / "dist" / "iris") == digests(runs[0][0] / "dist" / "iris")
    assert not list(Path(env["TMPDIR"]).iterdir())  # nothing staged on a hit
    assert any(n.endswith("/used") for n in gcs.objects("bucket", "fleet/"))


@pytest.fixture
def client_env(gcs, monkeypatch):
    for key, value in gcs.env().items():
        monkeypatch.setenv(key, value)


def test_concurrent_writers_and_readers_never_see_a_torn_or_mixed_entry(gcs, client_env):
    from graphfreeze.batch.cache import Cache, Outcome

    key = "ef" * 32
    made = [Outcome({"m.pb": bytes([n]) * (5000 + n), "m.pb.json": b'{"n": %d}' % n,
                     "m.savedmodel/saved_model.pb": bytes([n]) * 300},
                    [("android", "m.pb", "m.pb.json")]) for n in range(4)]
    seen, stop = [], threading.Event()

    def write(n: int) -> None:
        cache = Cache("gs://bucket/race", check=False)
        for _ in range(6):
            cache.store(key, made[n])

    def read() -> None:
        cache = Cache("gs://bucket/race", check=False)
        while not stop.is_set():
            seen.append(cache.load(key))

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    hits = [s for s in seen if s is not None]
    assert hits and all(s in made for s in hits), "a torn or mixed entry was served"
    assert Cache("gs://bucket/race", check=False).load(key) in made


def test_damaged_gcs_entry_is_rebuilt_and_published_again(fleet, gcs, samples, tmp_path):
    root, runs = fleet
    objects = gcs.objects("bucket", "fleet/")
    (entry,) = [n for n in objects if n.endswith("/entry.json")]
    record = json.loads(objects[entry])
    victim = f"{entry.rsplit('/', 1)[0]}/{record['stage']}/model.ckpt-200.pb"
    data = bytearray(objects[victim])
    data[len(data) // 2] ^= 1
    gcs.put("bucket", victim, bytes(data))
    work, env = machine(tmp_path, "d", samples)
    code, out, err = finish(start(gcs, work, env, "batch", "models.toml", "--cache", CACHE))
    assert code == 0, err
    assert status(work) == "ok"  # rebuilt, never served
    assert digests(work / "dist" / "iris") == digests(runs[0][0] / "dist" / "iris")
    again = gcs.objects("bucket", "fleet/")
    assert again[victim] == objects[victim] and json.loads(again[entry])["files"] == record["files"]
    shutil.rmtree(work / "dist")
    code, out, err = finish(start(gcs, work, env, "batch", "models.toml", "--cache", CACHE))
    assert code == 0 and status(work) == "cached", err


@pytest.mark.parametrize("damage", ["a missing file", "a torn entry.json", "a foreign entry.json"])
def test_half_published_gcs_entry_is_a_miss_until_published_again(gcs, client_env, damage):
    from graphfreeze.batch.cache import Cache, Outcome

    key, cache = "ab" * 32, Cache("gs://bucket/unit", check=False)
    outcome = Outcome({"m.pb": b"graph", "m.pb.json": b"{}", "m.savedmodel/saved_model.pb": b"s"},
                      [("android", "m.pb", "m.pb.json"), ("server", "m.savedmodel", "m.pb.json")])
    cache.store(key, outcome)
    assert cache.load(key) == outcome
    objects = gcs.objects("bucket", "unit/")
    (entry,) = [n for n in objects if n.endswith("/entry.json")]
    stage = json.loads(objects[entry])["stage"]
    if damage == "a missing file":
        gcs.delete("bucket", f"{entry.rsplit('/', 1)[0]}/{stage}/m.savedmodel/saved_model.pb")
    elif damage == "a torn entry.json":
        gcs.put("bucket", entry, objects[entry][:40])
    else:
        gcs.put("bucket", entry, objects[entry].replace(b"ab" * 32, b"cd" * 32))
    assert cache.load(key) is None
    cache.store(key, outcome)
    assert cache.load(key) == outcome
    for name in objects:
        gcs.delete("bucket", name)


def test_unwritable_gcs_cache_is_one_line_before_any_conversion(gcs, samples, tmp_path):
    work, env = machine(tmp_path, "e", samples)
    began = time.monotonic()
    code, out, err = finish(start(gcs, work, env, "batch", "models.toml", "--cache",
                                  "gs://no-such-bucket/cache", python=True))
    assert code == 4, err
    assert err.splitlines()[0] == ("error: --cache gs://no-such-bucket/cache: cannot write there "
                                   "(no such bucket); choose another --cache, or --no-cache")
    assert err.splitlines()[1:] == ["heavy modules: "]  # no worker, no conversion
    assert out == "" and not (work / "dist").exists()
    print(f"refused in {time.monotonic() - began:.2f} s")


def test_ls_and_prune_on_gcs(fleet, gcs, samples, tmp_path):
    env = {"TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    code, out, err = finish(start(gcs, tmp_path, env, "cache", "ls", CACHE))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["KEY", "JOB", "TARGETS", "SIZE", "LAST", "USED"]
    assert lines[1].split()[1:3] == ["iris", "android,server"]
    assert lines[-1].endswith(f" in {CACHE}") and int(lines[-1].split()[0]) == len(lines) - 2
    before = gcs.objects("bucket", "fleet/")
    code, out, err = finish(start(gcs, tmp_path, env, "cache", "prune", CACHE, "--max-size", "0",
                                  "--dry-run"))
    assert code == 0, err
    assert out.splitlines()[0].startswith("would remove ") and gcs.objects("bucket", "fleet/") \
        == before
    code, out, err = finish(start(gcs, tmp_path, env, "cache", "prune", CACHE, "--older-than", "1d"))
    assert code == 0 and out.startswith("pruned 0 entries"), err
    code, out, err = finish(start(gcs, tmp_path, env, "cache", "prune", CACHE, "--max-size", "1KB"))
    assert code == 0 and out.splitlines()[-1].startswith(f"pruned {len(lines) - 2} entries"), err
    assert gcs.objects("bucket", "fleet/") == {}  # the module's last use of `fleet`
