"""Shared fixtures: real sample checkpoints built once per session by models/build_samples.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from filelock import FileLock
from graphfreeze.process.environment import set_up

from tests.model_server import ModelServer

ROOT = Path(__file__).resolve().parent.parent
set_up()  # the environment a run sets (tf.keras is tf_keras, logs quiet, no telemetry), as the CLI


def _shared(tmp_path_factory, name: str) -> Path:
    """A folder every pytest-xdist worker of this run shares (the session's own without xdist)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    (root / name).mkdir(exist_ok=True)
    return root / name


def _once(folder: Path, build) -> Path:
    """build(folder) run by the first worker to get here; the others wait for it, then reuse it."""
    with FileLock(f"{folder}.lock"):
        if not Path(f"{folder}.built").exists():
            try:
                build(folder)
            except BaseException:  # the next worker builds it again from nothing
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                raise
            Path(f"{folder}.built").touch()
    return folder


# this worker's model builds: each `python models/SCRIPT ARGS` in a process of its own, forked by
# a server that imported TensorFlow once (tests/model_server.py)
_BUILDS = ModelServer()


def _run(script: str, *args, cwd: Path | None = None) -> None:
    _BUILDS.run(ROOT / "models" / script, *args, cwd=cwd)


def pytest_sessionfinish(session, exitstatus):
    _BUILDS.close()


def _built(tmp_path_factory, script: str, name: str) -> Path:
    return _once(_shared(tmp_path_factory, name), lambda out: _run(script, out))


def _copier(root: Path, tmp_path: Path):
    """copy(name): a fresh copy of root/name (a file or directory) that a test may change."""

    def copy(name: str) -> Path:
        src, dest = root / name, tmp_path / name
        if src.is_dir():
            shutil.copytree(src, dest)
        else:
            shutil.copy(src, dest)
        return dest

    return copy


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> Path:
    """Directory with one model_dir per sample (iris, iris_resource, ..., cnn_v2)."""
    return _built(tmp_path_factory, "build_samples.py", "samples")


@pytest.fixture
def sample(samples, tmp_path):
    """A fresh copy of one sample model_dir (tests may write or break files in it)."""
    return _copier(samples, tmp_path)


@pytest.fixture(scope="session")
def other_samples(tmp_path_factory) -> Path:
    """One model of every non-checkpoint kind (models/other_sources.py), built once."""
    return _built(tmp_path_factory, "other_sources.py", "other")


@pytest.fixture(scope="session")
def keras_layers(tmp_path_factory) -> Path:
    """One small CNN saved the four ways Keras users save it (models/keras_layers.py)."""
    return _built(tmp_path_factory, "keras_layers.py", "keras_layers")


@pytest.fixture(scope="session")
def wide(tmp_path_factory) -> Path:
    """A checkpoint with 44 MB of convolution weights behind batch norms (models/small_cnn.py
    --wide), whose frozen weights are held apart from the graph (read-only use: copy it)."""
    return _once(_shared(tmp_path_factory, "wide"), lambda out: _run(
        "small_cnn.py", "--out", out, "--wide", 640, "--blocks", 4, "--size", 8, "--steps", 1))


@pytest.fixture(scope="session")
def causal_lms(tmp_path_factory) -> Path:
    """Tiny keras-hub GPT-2, Gemma and Llama, trained to count (models/causal_lms.py):
    NAME/model.keras (read-only use: copy it)."""
    return _built(tmp_path_factory, "causal_lms.py", "causal_lms")


@pytest.fixture(scope="session")
def source_cases(tmp_path_factory) -> Path:
    """The source edge cases of models/source_cases.py, built once."""
    return _built(tmp_path_factory, "source_cases.py", "source_cases")


@pytest.fixture
def other(other_samples, tmp_path):
    """A fresh copy of one file or directory from other_samples."""
    return _copier(other_samples, tmp_path)


@pytest.fixture(scope="session")
def hostile_models(tmp_path_factory) -> Path:
    """models/hostile.py's models in DIR/models, each aimed at DIR/target (read-only use)."""
    out = tmp_path_factory.mktemp("hostile")  # each worker's own: tests empty and refill target
    _run("hostile.py", out / "models", out / "target")
    return out


def _zoo_builder(root, script: str):
    """name -> (model path, extra freeze args), building SCRIPT's model NAME on first use."""
    import json

    def build(name: str):
        entry = root / name / "zoo.json"
        with FileLock(f"{root / name}.lock"):
            if not entry.exists():
                _run(script, root, "--only", name)
        spec = json.loads(entry.read_text())
        return root / name / spec["path"], list(spec.get("args", []))

    return build


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    """zoo(name) -> (model path, extra freeze args): one models/zoo.py model, built on first use
    into a session folder (read-only use: pass `-o` to write elsewhere)."""
    return _zoo_builder(_shared(tmp_path_factory, "zoo"), "zoo.py")


@pytest.fixture(scope="session")
def family(tmp_path_factory):
    """family(name) -> (model path, extra freeze args): one models/families.py model (the second
    zoo), built on first use into a session folder (read-only use: pass `-o` elsewhere)."""
    return _zoo_builder(_shared(tmp_path_factory, "families"), "families.py")


@pytest.fixture
def mount(tmp_path):
    """mount(*options) -> a fresh folder with a file system mounted on it (tmpfs, a read-only
    bind mount: real full disks and read-only folders), unmounted at the end; skips where this
    sandbox cannot mount."""
    mounted = []

    def make(*options: str) -> Path:
        folder = tmp_path / f"mnt{len(mounted)}"
        folder.mkdir()
        for cmd in options:
            done = subprocess.run(["mount", *cmd.split(), str(folder)], capture_output=True,
                                  text=True)
            if done.returncode:
                pytest.skip(f"cannot mount here ({done.stderr.strip()})")
            mounted.append(folder)
        return folder

    yield make
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture
def freeze():
    """Run the `freeze` CLI in-process; returns click's Result (exit_code, output, stderr)."""
    from graphfreeze_cli.main import main

    def run(*args: str):
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)

    return run


# the `freeze` command, noting in `noted.json` of its folder whether TensorFlow got imported in
# its own process and how many TensorFlow children it started
NOTED = ("import sys, atexit, json\n"
         "if '--with-tensorflow' in sys.argv:\n"
         "    sys.argv.remove('--with-tensorflow')\n"
         "    import tensorflow\n"
         "from graphfreeze.process import tensorflow_child\n"
         "children, start = [], tensorflow_child.Child.__init__\n"
         "def noted(self, *args):\n"
         "    children.append(1)\n"
         "    start(self, *args)\n"
         "tensorflow_child.Child.__init__ = noted\n"
         "in_child, stop = [], tensorflow_child.stop\n"
         "def stopped(memo):\n"
         "    child = memo.get(tensorflow_child.KEY)\n"
         "    if isinstance(child, tensorflow_child.Child):\n"
         "        in_child.append(child.submit(tensorflow_child.python_imported).result(60))\n"
         "    stop(memo)\n"
         "tensorflow_child.stop = stopped\n"
         "atexit.register(lambda: open('noted.json', 'w').write(json.dumps({\n"
         "    'tensorflow': 'tensorflow' in sys.modules, 'children': len(children),\n"
         "    'python_in_child': any(in_child)})))\n"
         "from graphfreeze_cli.main import main\n"
         "sys.argv[0] = 'freeze'\n"
         "main()\n")


@pytest.fixture
def freeze_noted():
    """freeze_noted(folder, *args) -> (CompletedProcess, {"tensorflow": imported in the
    command's own process, "children": TensorFlow children started, "python_in_child":
    TensorFlow's Python API imported in one of them}): the `freeze` command in
    its own process, run in `folder` (`--with-tensorflow`: imported before the command runs)."""
    import json
    import sys

    def run(folder: Path, *args: str):
        done = subprocess.run([sys.executable, "-c", NOTED, *map(str, args)], cwd=folder,
                              capture_output=True, text=True)
        noted = json.loads((folder / "noted.json").read_text())
        (folder / "noted.json").unlink()
        return done, noted

    return run


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch):
    """Tests run inside GitHub Actions too: batch runs must not write report.md into the real
    job summary (a test that wants it sets GITHUB_STEP_SUMMARY itself)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


# the fast tier (`make test-fast`, `pytest -m "not slow"`): a test is slow when it builds sample
# models (a fixture below), starts a cluster, or runs the installed command end to end (tests/e2e)
SLOW_FIXTURES = {"samples", "sample", "other_samples", "other", "keras_layers", "wide",
                 "source_cases", "causal_lms", "hostile_models", "zoo", "family", "freeze",
                 "freeze_noted"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: builds sample models or runs end to end (not in "
                                       "`make test-fast`)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or "e2e" in item.path.parts:
            item.add_marker(pytest.mark.slow)
