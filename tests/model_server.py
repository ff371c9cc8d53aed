"""The fixtures' model builds (models/*.py scripts) without a TensorFlow start-up each: one
process per pytest worker imports TensorFlow once, then forks a child per build, which runs the
script as `python models/SCRIPT ARGS` does (as __main__, in the cwd and environment the test
process has at the call, its output to a log, its exit code sent back). The server itself runs
nothing in TensorFlow, so every child starts as a fresh process that imported TensorFlow first.

    python tests/model_server.py   # the server: one JSON request per line in, one exit code out
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

BUILD_SECONDS = 600  # no model build takes longer: a fork that hangs is run afresh


class ModelServer:
    """run(script, *args, cwd=None): the script run to the end (in cwd, default the caller's),
    or RuntimeError with its output."""

    def __init__(self):
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                             text=True, start_new_session=True)
        return self._process

    def run(self, script: Path, *args, cwd: Path | None = None) -> None:
        with self._lock, tempfile.TemporaryDirectory(prefix="gfbuild-") as folder:
            log = Path(folder) / "log"
            process = self._start()
            request = {"argv": [str(script), *map(str, args)], "cwd": str(cwd or os.getcwd()),
                       "env": dict(os.environ), "log": str(log)}
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            ready = select.select([process.stdout], [], [], BUILD_SECONDS)[0]
            line = process.stdout.readline() if ready else ""
            if not line:  # (a fork of a process with TensorFlow's threads may hang): afresh
                self.close(kill=True)
                done = subprocess.run([sys.executable, *request["argv"]], cwd=request["cwd"],
                                      capture_output=True, text=True)
                if done.returncode:
                    raise RuntimeError(f"{' '.join(request['argv'])} exited {done.returncode}:\n"
                                       f"{(done.stdout + done.stderr)[-5000:]}")
                return
            code = json.loads(line)
            if code != 0:
                text = log.read_text(errors="replace") if log.exists() else ""
                raise RuntimeError(f"{' '.join(request['argv'])} exited {code}:\n{text[-5000:]}")

    def close(self, kill: bool = False) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if kill:  # the server and the build it forked
            with contextlib.suppress(OSError):
                os.killpg(process.pid, 9)
        with contextlib.suppress(OSError):
            process.stdin.close()  # the server ends at EOF
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _child(request: dict) -> int:
    """In the forked child: run the script as __main__; its exit code."""
    import runpy
    import traceback

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as `python SCRIPT` has it
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        print(done.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 -- as the interpreter reports it
        traceback.print_exc()
        return 1
    return 0


def _serve() -> int:
    import tensorflow  # noqa: F401 -- once, for every child

    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            return _child(request)  # the child ends as a script run by `python` does
        _, status = os.waitpid(pid, 0)
        print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)
    return 0


if __name__ == "__main__":
    # run as a script, its folder (tests/) is first on sys.path, and tests/inspect/ would hide
    # the standard library's inspect from TensorFlow (each build then fell back to a process of
    # its own, importing TensorFlow again): the folder goes, as each child sets its script's own
    sys.path.pop(0)
    sys.exit(_serve())
