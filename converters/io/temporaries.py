"""Temporaries of writes in progress, and sweeping those a killed run left behind.

Temporaries are named `.NAME.graphfreeze.HOST.PID.START.RANDOM.tmp`: marked as ours, and owned by
the process with that pid on that host, started at START (clock ticks after boot, so a reused pid
is told apart). A later run on NAME removes them once that process is gone; temporaries of other
hosts (a shared disk, gs://) only once they are older than STALE_SECONDS.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
import uuid

from graphfreeze.io.paths import basename, dirname, is_remote, join
from graphfreeze.io.paths import gfile as _gfile

STALE_SECONDS = 24 * 3600
_MARK = "graphfreeze"


def _start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        if os.path.isdir("/proc/self"):
            return None
        try:  # no /proc: the pid alone
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            pass
        return 0


_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:32] or "host"


def _owner() -> str:
    return f"{_HOST}.{os.getpid()}.{_start_ticks(os.getpid()) or 0}"


def temp_name(path: str) -> str:
    """A fresh temporary name for `path`, in its own folder, marked as this process's."""
    return f".{basename(path)}.{_MARK}.{_owner()}.{uuid.uuid4().hex[:8]}.tmp"


def _stale(name: str, base: str, age: float) -> bool:
    """Whether `name` is a temporary of `base` left by a process that is gone."""
    head = f".{base}.{_MARK}."
    if not (name.startswith(head) and name.endswith(".tmp")):
        return False
    parts = name[len(head):-len(".tmp")].split(".")
    if len(parts) != 4 or not (parts[1].isdigit() and parts[2].isdigit()):
        return False
    host, pid, start, _ = parts
    if host != _HOST:
        return age > STALE_SECONDS
    now = _start_ticks(int(pid))
    return now is None or now not in (0, int(start)) and int(start) != 0  # gone, or pid reused


def sweep(path: str) -> list[str]:
    """Remove the temporaries of `path` that killed runs left behind (beside it, and for remote
    paths in the local temp dir); returns what was removed. Never touches a live run's."""
    import time

    base, found = basename(path), []
    folders = [dirname(path) or "."] + ([tempfile.gettempdir()] if is_remote(path) else [])
    for folder in folders:
        if is_remote(folder):
            if any(c in base for c in "*?[]\\"):
                continue  # not expressible as a GCS glob prefix
            gfile = _gfile()
            try:
                names = [basename(p) for p in gfile.glob(join(folder, f".{base}.{_MARK}.*"))]
            except Exception:
                continue
            for name in names:
                full = join(folder, name)
                try:
                    age = time.time() - gfile.stat(full).mtime_nsec / 1e9
                except Exception:
                    continue
                if _stale(name, base, age):
                    remove(full)
                    found.append(full)
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            full = os.path.join(folder, name)
            try:
                age = time.time() - os.lstat(full).st_mtime
            except OSError:
                continue
            if _stale(name, base, age):
                remove(full)
                found.append(full)
    return found


def remove(path: str) -> None:
    """Remove a file or directory tree, local or remote; best effort."""
    try:
        if not is_remote(path):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.lexists(path):
                os.remove(path)
            return
        gfile = _gfile()
        if gfile.isdir(path):
            gfile.rmtree(path)
        elif gfile.exists(path):
            gfile.remove(path)
    except Exception:  # never hide the error that got us here
        pass


@contextlib.contextmanager
def signals_deferred():
    """Hold SIGINT, SIGTERM and SIGHUP inside the block and deliver them (to the handlers there
    were) at its end: for renames that must all happen and removals that must finish. Only in
    the main thread (the only one signal handlers run in)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    saved = {}
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        saved[signum] = signal.signal(signum, lambda got, frame: held.append(got))
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)


def private_dir(name: str) -> str:
    """A fresh folder `.NAME.graphfreeze.HOST.PID.START.RANDOM.tmp` in the system temp dir,
    marked as this process's (those of processes that are gone are swept first)."""
    base = os.path.join(tempfile.gettempdir(), name)
    sweep(base)
    path = os.path.join(os.path.dirname(base), temp_name(base))
    os.mkdir(path, 0o700)
    return path


_outer: list[str | None] = []  # TMPDIR as each open private_tempdir found it, outermost first


def _set_tmpdir(value: str | None, key: str = "TMPDIR") -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


@contextlib.contextmanager
def user_tmpdir():
    """Inside the block, TMPDIR (what child processes and libraries read) is the user's again,
    as before any private_tempdir: for programs whose files outlive our run or need short paths
    (Ray's session folder and its sockets). Python's tempfile keeps the private folder."""
    if not _outer:
        yield
        return
    saved = os.environ.get("TMPDIR")
    _set_tmpdir(_outer[0])
    try:
        yield
    finally:
        _set_tmpdir(saved)


@contextlib.contextmanager
def private_tempdir(name: str = "graphfreeze-run"):
    """Inside the block, temporary files (Python's tempfile, TMPDIR for libraries and child
    processes: TensorFlow's autograph modules, tf2onnx, staging folders; the caches and config
    libraries would write in HOME, `_HOMES`) go to a private_dir, removed at the end: a run
    that is interrupted anywhere leaves nothing in /tmp or HOME, and one that is killed
    outright is swept by the next."""
    path = private_dir(name)
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    homes = {key: os.environ.get(key) for key in _HOMES if _writes_home(key)}
    os.environ["TMPDIR"] = tempfile.tempdir = path
    os.environ.update({key: os.path.join(path, _HOMES[key]) for key in homes})
    _outer.append(saved[0])
    try:
        yield path
    finally:
        with signals_deferred():
            _outer.pop()
            _set_tmpdir(saved[0])
            tempfile.tempdir = saved[1]
            for key, value in homes.items():
                _set_tmpdir(value, key)
            remove(path)


# what libraries write in the home folder when imported, in the private folder too: onnxruntime's
# device id (~/.cache/Microsoft), Keras's keras.json (~/.keras)
_HOMES = {"XDG_CACHE_HOME": "cache", "KERAS_HOME": "keras"}


def _writes_home(key: str) -> bool:
    """Whether a library would write in the folder `key` names: always for the cache; Keras
    only when it has no keras.json yet (one the user has is read, and keeps its say)."""
    if key != "KERAS_HOME":
        return True
    folder = os.environ.get(key) or os.path.join(os.path.expanduser("~"), ".keras")
    return not os.path.exists(os.path.join(folder, "keras.json"))
