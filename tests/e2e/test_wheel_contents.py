"""dist/'s wheel and sdist (`make dist`: the sdist, then the wheel built from it) hold exactly
the package's files from the source tree, byte for byte: every module and every data file the
code reads at run time (target TOMLs, host_ops.json, ...) under its installed name, nothing else
from the checkout (tests/, models/, bench/). The installs the other e2e tests run hold the same."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from graphfreeze.io.tomlread import loads

from tests.e2e.installs import BASE, DIST, ROOT, WHEEL, missing, package_files

WHY = missing(DIST / ".built", "dist")
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))
INSTALLED_AS = {"converters": "graphfreeze", "cli": "graphfreeze_cli"}
# what builds the wheel beside the packages; setuptools adds setup.cfg, PKG-INFO and egg-info/
BUILD_FILES = {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md"}


def installed_name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).parts
    return "/".join([INSTALLED_AS[folder], *rest])


def the(pattern: str) -> Path:
    (found,) = DIST.glob(pattern)
    return found


def wheel_files() -> dict[str, bytes]:
    with zipfile.ZipFile(the("graphfreeze-*.whl")) as wheel:
        return {n: wheel.read(n) for n in wheel.namelist() if not n.endswith("/")}


def test_the_wheel_holds_the_package_files_and_nothing_else():
    files = wheel_files()
    (info,) = {n.split("/")[0] for n in files if n.split("/")[0].endswith(".dist-info")}
    packaged = {n: data for n, data in files.items() if not n.startswith(info + "/")}
    expected = {installed_name(p): p.read_bytes() for p in package_files()}
    assert (set(expected) - set(packaged), set(packaged) - set(expected)) == (set(), set())
    assert [n for n in expected if packaged[n] != expected[n]] == []  # no stale build/ copies
    assert any(n.endswith(".toml") for n in packaged) and any(n.endswith(".json") for n in packaged)
    project = loads((ROOT / "pyproject.toml").read_text())["project"]
    metadata = files[f"{info}/METADATA"].decode()
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines()
              if line.startswith("Provides-Extra:")}
    assert extras == set(project["optional-dependencies"])
    scripts = files[f"{info}/entry_points.txt"].decode()
    assert all(f"{name} = {ref}" in scripts for name, ref in project["scripts"].items())


def test_the_sdist_holds_what_builds_the_wheel_and_nothing_else():
    with tarfile.open(the("graphfreeze-*.tar.gz")) as sdist:
        members = {m.name.split("/", 1)[1]: sdist.extractfile(m).read()
                   for m in sdist.getmembers() if m.isfile()}
    built = {n for n in members if n in {"PKG-INFO", "setup.cfg"} or ".egg-info/" in n}
    expected = {str(p.relative_to(ROOT)): p.read_bytes() for p in package_files()}
    expected |= {name: (ROOT / name).read_bytes() for name in BUILD_FILES}
    assert (set(expected) - set(members), set(members) - set(expected) - built) == (set(), set())
    assert [n for n in expected if members[n] != expected[n]] == []


def _record(venv: Path) -> dict[str, str]:
    """The installed package's files (bytecode aside) and their sha256s, from pip's RECORD."""
    (record,) = venv.glob("lib/python*/site-packages/graphfreeze-*.dist-info/RECORD")
    return {path: digest for path, digest, _ in csv.reader(io.StringIO(record.read_text()))
            if path.split("/")[0] in INSTALLED_AS.values() and "__pycache__" not in path}


@pytest.mark.parametrize("venv", [WHEEL, BASE], ids=lambda v: v.name)
def test_the_installs_hold_the_wheels_files(venv):
    """.venv-base has dist/'s wheel; .venv-wheel the one pip built from the checkout for
    action.yml's install step: the same files, byte for byte."""
    why = missing(venv / ".installed", venv.name, *(["action.yml"] if venv == WHEEL else []))
    if why:
        pytest.skip(why)
    digests = {n: "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
               .rstrip("=") for n, data in wheel_files().items()
               if n.split("/")[0] in INSTALLED_AS.values()}
    assert _record(venv) == digests
