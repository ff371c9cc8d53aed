"""Runs that end badly leave nothing behind: killed with SIGKILL (the next run sweeps what it
left), a full disk or a read-only folder (one-line error, no partial file), and two runs writing
one output with --force at once (one whole artifact). Disks are real: a small tmpfs and a
read-only bind mount (skipped where the sandbox cannot mount)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FREEZE = str(Path(sys.executable).with_name("freeze"))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def temporaries(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if ".graphfreeze." in n) if folder.exists() else []


def whole(out: Path, name: str) -> None:
    """out/name matches the sha256 and size its sidecar records."""
    car = json.loads((out / f"{name}.json").read_text())
    path = out / name
    if path.is_dir():
        from graphfreeze import storage

        assert storage.tree_digest(str(path)) == (car["sha256"], car["bytes"])
    else:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == car["sha256"]


def test_sigkill_leaves_temporaries_the_next_run_removes(sample, freeze):
    model_dir = sample("iris")
    out = model_dir / "out"
    args = ["--ckpt", str(model_dir / "model.ckpt-200"), "--outputs", "probs", "-o", str(out)]
    run = subprocess.Popen([FREEZE, *args, "--target", "android,server,tflite,onnx"], env=ENV,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(temporaries(out)) < 2:  # the .pb staged, the SavedModel's workdir made
        assert run.poll() is None and time.monotonic() < deadline, "run ended before it was killed"
        time.sleep(0.005)
    run.send_signal(signal.SIGKILL)
    run.wait()
    left = temporaries(out)
    assert left and all(f".{run.pid}." in n for n in left)  # its own, marked with its pid

    result = freeze(*args, "--target", "android,server")
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(out)) == ["model.ckpt-200.pb", "model.ckpt-200.pb.json",
                                       "model.ckpt-200.savedmodel", "model.ckpt-200.savedmodel.json"]


@pytest.mark.parametrize("target", ["android", "server", "tflite"])
def test_full_disk_is_one_line_and_leaves_nothing(sample, freeze, mount, target):
    model_dir = sample("iris")
    disk = mount("-t tmpfs -o size=256k,nr_inodes=64 tmpfs")
    subprocess.run(["dd", "if=/dev/zero", f"of={disk}/filler", "bs=4k"], capture_output=True)
    out = disk / "models" / "out"
    result = freeze("--ckpt", model_dir / "model.ckpt-200", "--outputs", "probs", "--target", target,
                    "-o", out)
    assert result.exit_code == 4, result.output
    message = result.stderr.strip()
    assert message.startswith(f"error: {out}") and "\n" not in message  # the folder or a file
    assert message.endswith("no space left on device; free some space or choose another -o")
    assert os.listdir(disk) == ["filler"]


def test_read_only_folder_is_one_line(sample, freeze, mount):
    model_dir = sample("iris")
    folder = mount(f"--bind {model_dir}", "-o remount,bind,ro")
    result = freeze("--ckpt", model_dir / "model.ckpt-200", "--outputs", "probs", "-o", folder / "m.pb")
    assert result.exit_code == 4, result.output
    assert result.stderr.strip() == (f"error: {folder}/m.pb: directory {folder} is on a "
                                     "read-only file system; choose another -o")
    assert not (model_dir / "m.pb").exists()


def test_two_runs_with_force_leave_one_whole_artifact(sample):
    model_dir = sample("iris")
    out = model_dir / "out"
    args = [FREEZE, "--ckpt", str(model_dir / "model.ckpt-200"), "--outputs", "probs",
            "--target", "android,server", "-o", str(out), "--force"]
    runs = [subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    for run in runs:
        assert run.wait(timeout=300) == 0, run.stderr.read()
    assert sorted(os.listdir(out)) == ["model.ckpt-200.pb", "model.ckpt-200.pb.json",
                                       "model.ckpt-200.savedmodel", "model.ckpt-200.savedmodel.json"]
    whole(out, "model.ckpt-200.pb")
    whole(out, "model.ckpt-200.savedmodel")
