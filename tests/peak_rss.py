"""Peak memory, measured so an earlier peak cannot hide it: ru_maxrss is a high-water mark over a
process's whole life (and a child forked from a large process inherits it across exec), so a
test reads VmHWM after resetting it (/proc/PID/clear_refs, Linux)."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

# the freeze CLI in a child that reports its own peak (VmHWM, reset at exec) as its last line
_CLI = ("import atexit, sys\n"
        "def peak():\n"
        "    hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "    sys.stderr.write('\\npeak_kib ' + hwm.split()[1] + '\\n')\n"
        "atexit.register(peak)\n"
        "from graphfreeze_cli.main import main\n"
        "sys.argv[0] = 'freeze'\n"
        "main()\n")


def freeze_peak_mb(args: list[str], cwd) -> float:
    """Peak RSS of the `freeze` command's own process for `args`, in MB (it must succeed)."""
    done = subprocess.run([sys.executable, "-c", _CLI, *args], cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, done.stderr
    return int(done.stderr.split("peak_kib ")[-1].split()[0]) / 1024


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith(key + ":")).split()[1])


@contextmanager
def growth_kib():
    """`with growth_kib() as grown:` ... `grown()`: how far this process's peak RSS rose above
    its RSS at the start of the block, in KiB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    start = _status("VmRSS")
    yield lambda: _status("VmHWM") - start
