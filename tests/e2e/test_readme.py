"""A newcomer's first ten minutes: every command README.md shows, typed in order on a copy of the
checkout, as the README says (`make demo`, `source .venv/bin/activate`, `make samples`, then each
block from the checkout's root). Read from the README itself, not copied here: an example that
stops running as shown fails this test. The copy shares this checkout's `.venv` (make is told it
is up to date: its pyproject.toml is older than the venv's stamp), so nothing is installed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = re.compile(r"```console\n(.*?)```", re.S)
EXIT_NOTE = re.compile(r"\s+# exit (\d+)$")


def readme_blocks(text: str) -> list[list[tuple[str, int]]]:
    """Each console block's commands with the exit code the README shows for each (0 unless a
    `# exit N` note says otherwise)."""
    blocks = []
    for body in CONSOLE.findall(text):
        commands = []
        for line in body.splitlines():
            if line.startswith("$ "):
                note = EXIT_NOTE.search(line)
                commands.append((EXIT_NOTE.sub("", line[2:]), int(note[1]) if note else 0))
        if commands:
            blocks.append(commands)
    return blocks


def script(blocks: list[list[tuple[str, int]]], checkout: Path) -> str:
    """One bash session: each block from the checkout's root; the first command whose exit code
    is not the README's stops it, naming itself."""
    lines = []
    for block in blocks:
        lines.append(f"cd {shlex.quote(str(checkout))}")
        for command, code in block:
            lines += [f"echo {shlex.quote('$ ' + command)}", command,
                      f"rc=$?; if [ $rc -ne {code} ]; then echo "
                      f"{shlex.quote('README command failed: ' + command)} \"(exit $rc, the README "
                      f"shows {code})\"; exit 1; fi"]
    return "\n".join(lines) + "\n"


def copy_checkout(into: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in files.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            (into / name).write_bytes((ROOT / name).read_bytes())
            (into / name).chmod((ROOT / name).stat().st_mode)
    (into / ".venv").symlink_to(ROOT / ".venv")
    os.utime(into / "pyproject.toml", (0, 0))  # older than .venv/.installed: make installs nothing
    return into


def test_readme_blocks_are_read_with_their_exit_codes():
    text = "x\n```console\n$ make demo   # a note\n$ freeze scan a    # exit 3\nout\n```\n" \
           "```console\n$ cd b\n```\n```json\n$ not a command\n```\n"
    assert readme_blocks(text) == [[("make demo   # a note", 0), ("freeze scan a", 3)],
                                   [("cd b", 0)]]


def test_every_readme_command_runs_as_shown_on_a_fresh_copy(tmp_path):
    blocks = readme_blocks((ROOT / "README.md").read_text())
    assert blocks[0][0][0].startswith("make demo") and \
        any(c.startswith("source .venv/bin/activate") for c, _ in blocks[0])
    checkout = copy_checkout(tmp_path / "graphfreeze")
    venv_bin = str(ROOT / ".venv" / "bin")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {**{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
           "PATH": path, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    dry = subprocess.run(["make", "-n", "demo", "samples"], cwd=checkout, env=env, capture_output=True,
                         text=True, check=True)
    assert "pip install" not in dry.stdout, dry.stdout  # it would repoint the shared .venv
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script(blocks, checkout)],
                          cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-6000:]
    assert (checkout / "models/out/iris/model.ckpt-200.pb").is_file()  # the headline command's
    assert (checkout / "models/out/dist/report.html").is_file()  # the batch example's
