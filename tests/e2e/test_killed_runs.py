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
        from graphfreeze.io import storage

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


@pytest.mark.parametrize("target", ["android", "server", "tflite", "onnx", "openvino"])
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


def _loaded(pid: int, library: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return library in f.read()
    except OSError:
        return False


def signalled(model_dir: Path, out: Path, tmp: Path, ready, signum: int):
    """Run `freeze` (android and onnx: onnxruntime is imported lazily, to verify), send `signum`
    once `ready(pid)`; (signal sent while it ran, exit code, stderr). TMPDIR is `tmp`."""
    run = subprocess.Popen([FREEZE, "--ckpt", str(model_dir / "model.ckpt-200"), "--outputs",
                            "probs", "--target", "android,onnx", "-o", f"{out}/", "--force"],
                           env={**ENV, "TMPDIR": str(tmp)}, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while run.poll() is None and not ready(run.pid) and time.monotonic() < deadline:
        time.sleep(0.002)
    sent = run.poll() is None
    if sent:
        run.send_signal(signum)
    _, err = run.communicate(timeout=240)
    return sent, run.returncode, err


@pytest.mark.parametrize("library,signum", [
    ("libtensorflow_framework", signal.SIGTERM),  # while TensorFlow is being imported
    ("onnxruntime_pybind11_state", signal.SIGINT),  # while onnxruntime is (it turned Ctrl-C
])                                                  # into "ImportError: initialization failed")
def test_a_signal_while_a_library_loads_writes_nothing(sample, tmp_path, library, signum):
    model_dir, out, tmp = sample("iris"), tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    sent, code, err = signalled(model_dir, out, tmp, lambda pid: _loaded(pid, library), signum)
    assert sent, "the run ended before the signal"
    assert (code, err) == (128 + signum, "interrupted; nothing written\n")
    assert not out.exists() or os.listdir(out) == []
    assert os.listdir(tmp) == []  # nor TensorFlow's autograph files, nor staging folders


def test_a_signal_after_the_commit_exits_0(sample, tmp_path):
    """Every file is written: a Ctrl-C while the results print changes nothing."""
    model_dir, out, tmp = sample("iris"), tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    for _ in range(3):  # the window after the commit is short: tried until the signal lands
        sent, code, err = signalled(model_dir, out, tmp,
                                    lambda pid: (out / "model.ckpt-200.onnx.json").exists(),
                                    signal.SIGINT)
        assert (code, err) == (0, ""), err
        if sent:
            break
    assert sent, "every run ended before the signal"
    assert sorted(os.listdir(out)) == ["model.ckpt-200.onnx", "model.ckpt-200.onnx.json",
                                       "model.ckpt-200.pb", "model.ckpt-200.pb.json"]
    whole(out, "model.ckpt-200.pb")
    whole(out, "model.ckpt-200.onnx")
    assert os.listdir(tmp) == []
