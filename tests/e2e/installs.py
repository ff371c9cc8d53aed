"""The installs `make test` builds beside the checkout -- dist/ (the wheel and the sdist),
.venv-base (dist/'s wheel, no extras), .venv-wheel (action.yml's install step, every extra) --
and how to run them as a user does: no PYTHONPATH, outside the checkout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from graphfreeze.io.tomlread import loads

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
BASE = ROOT / ".venv-base"
WHEEL = ROOT / ".venv-wheel"
# what the wheel is built from (the Makefile's PACKAGED): newer than an install, it is stale
PACKAGED = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "converters", "cli")


def package_files() -> list[Path]:
    """Every file under converters/ and cli/ (compiled bytecode aside)."""
    return sorted(p for folder in ("converters", "cli") for p in (ROOT / folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def _newest_source(also: tuple[str, ...]) -> float:
    files = [ROOT / name for name in (*PACKAGED[:4], *also)] + package_files()
    return max(p.stat().st_mtime for p in files if p.exists())


def missing(stamp: Path, make_target: str, *also: str) -> str | None:
    """Why a test of STAMP's install must skip (absent, or older than the package's files or
    ALSO), or None. Plain `pytest` in a dev checkout skips; `make test` builds them first."""
    if not stamp.exists():
        return f"no {stamp.relative_to(ROOT)} (`make test` builds it: make {make_target})"
    if stamp.stat().st_mtime < _newest_source(also):
        return f"{stamp.relative_to(ROOT)} is older than the checkout (make {make_target})"
    return None


def builtin_targets() -> dict[str, dict]:
    """Target name -> its TOML, for every target TOML in the source tree (wherever it lives)."""
    found = {}
    for path in (ROOT / "converters").rglob("*.toml"):
        data = loads(path.read_text())
        if "name" in data and "stages" in data:
            found[data["name"]] = data
    return found


def user_env(**extra: str) -> dict:
    """This environment as a user's shell has it: no PYTHONPATH nor the Python and TensorFlow
    settings the test run made (`freeze` makes its own)."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "TF_USE_LEGACY_KERAS",
            "TF_CPP_MIN_LOG_LEVEL"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def run(program: Path, *args, cwd: Path, timeout: float = 300, **env: str):
    """Run an installed program (`freeze`, `python`) in cwd, which is outside the checkout."""
    assert not Path(cwd).resolve().is_relative_to(ROOT), f"{cwd} is inside the checkout"
    return subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=user_env(**env), timeout=timeout)
