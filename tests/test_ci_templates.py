"""The CI templates (docs/CI.md): they parse, the action uses every input it declares, and their
shell steps, run with a stand-in `freeze` (or `python`), pass `freeze batch` the flags it takes
and pip the same install. With the real `freeze`: tests/e2e/test_wheel_ci.py."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
GITLAB = ROOT / "ci" / "gitlab" / "graphfreeze.gitlab-ci.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
yaml = pytest.importorskip("yaml")  # PyYAML: in the venv `make` builds (through ray)
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def load(path: Path):
    return yaml.safe_load(path.read_text())


def stand_in(tmp_path: Path, code: int = 0, program: str = "freeze") -> dict:
    """An environment whose `freeze` (or PROGRAM) writes its arguments, one a line, to
    tmp_path/args."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / program).write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{tmp_path}/args"\n'
                                   f"exit {code}\n")
    (bin_dir / program).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path)}


def freeze_args(tmp_path: Path) -> list[str]:
    return (tmp_path / "args").read_text().splitlines()


def test_action_declares_and_uses_every_input():
    action = load(ACTION)
    declared = set(action["inputs"])
    text = ACTION.read_text()
    used = set(re.findall(r"inputs\.([\w-]+)", text.split("\nruns:", 1)[1])) | \
        set(re.findall(r"inputs\.([\w-]+)", yaml.safe_dump(action["outputs"])))
    assert declared == used, (declared - used, used - declared)
    assert {"manifest", "cache-path", "cache-bucket", "baseline-artifact", "python-version",
            "args"} <= declared
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    assert all("shell" in s for s in steps if "run" in s)
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert uses == ["actions/setup-python", "actions/cache/restore", "actions/cache/save",
                    "actions/upload-artifact", "actions/upload-artifact"]
    assert "gh run download" in text  # report.md on the run page: tests/e2e/test_wheel_ci.py
    assert '"$GITHUB_ACTION_PATH"' in text  # graphfreeze from the action's own checkout


def action_step(name: str) -> dict:
    return next(s for s in load(ACTION)["runs"]["steps"] if s.get("name") == name)


def test_action_batch_step_passes_baseline_budgets_and_args(tmp_path):
    env = {**stand_in(tmp_path, code=8), "MANIFEST": "models.toml",
           "CACHE": "~/.cache/graphfreeze", "BASELINE": "/b/report.json", "REPORT_DIR": "dist",
           "ARGS": "--jobs 2  --shard 1/4", "FAIL_ON": "size > +5%\n\ntop1 < -0.5%\n",
           "GITHUB_OUTPUT": str(tmp_path / "out")}
    subprocess.run(["bash", "-eo", "pipefail", "-c", action_step("freeze batch")["run"]], env=env,
                   check=True)
    assert freeze_args(tmp_path) == [
        "batch", "models.toml", "--cache", f"{tmp_path}/.cache/graphfreeze", "--report", "dist",
        "--baseline", "/b/report.json", "--fail-on", "size > +5%", "--fail-on", "top1 < -0.5%",
        "--jobs", "2", "--shard", "1/4"]
    assert (tmp_path / "out").read_text().splitlines() == ["status=8",
                                                            "report=dist/report.json"]
    env.update(BASELINE="", FAIL_ON="", ARGS="", CACHE="gs://bucket/cache")
    subprocess.run(["bash", "-eo", "pipefail", "-c", action_step("freeze batch")["run"]], env=env,
                   check=True)
    assert freeze_args(tmp_path) == ["batch", "models.toml", "--cache", "gs://bucket/cache",
                                     "--report", "dist"]


def test_action_without_a_baseline_run_goes_on(tmp_path):
    """`gh` finds no run (here: no `gh` at all): the step says so and outputs an empty path."""
    env = {**stand_in(tmp_path), "ARTIFACT": "graphfreeze-report", "BASE": "main",
           "DEST": str(tmp_path / "b"), "GITHUB_OUTPUT": str(tmp_path / "out"),
           "GITHUB_WORKFLOW_REF": "o/r/.github/workflows/ci.yml@refs/heads/x",
           "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "1"}
    env["PATH"] = f"{tmp_path / 'bin'}:/usr/bin:/bin"
    done = subprocess.run(["bash", "-eo", "pipefail", "-c",
                           action_step("Download the base branch's report")["run"]], env=env,
                          capture_output=True, text=True, check=True)
    assert "no baseline" in done.stdout
    assert (tmp_path / "out").read_text() == "path=\n"


@pytest.mark.parametrize("extras", ["convert,openvino,ray", ""])
def test_the_action_and_gitlab_install_alike(tmp_path, extras):
    """The same pip command: `make test`'s .venv-wheel (the action's step, run as written) stands
    for GitLab's install from a checkout too."""
    env = stand_in(tmp_path, program="python")
    action = action_step("Install graphfreeze")["run"]
    subprocess.run(["bash", "-eo", "pipefail", "-c", action], check=True,
                   env={**env, "GITHUB_ACTION_PATH": "/src/graphfreeze", "EXTRAS": extras})
    by_action = freeze_args(tmp_path)
    gitlab = "set -e\n" + "\n".join(load(GITLAB)[".graphfreeze-base"]["before_script"])
    subprocess.run(["sh", "-c", gitlab], check=True, env={
        **env, "GRAPHFREEZE_INSTALL": "/src/graphfreeze", "GRAPHFREEZE_EXTRAS": extras})
    spec = f"/src/graphfreeze[{extras}]" if extras else "/src/graphfreeze"
    assert by_action == freeze_args(tmp_path) == [
        "-m", "pip", "install", "--disable-pip-version-check", spec]


def test_gitlab_without_an_install_source_says_so_in_one_line(tmp_path):
    """graphfreeze is no PyPI release: the template's default installs nothing and says what to
    set, rather than installing whatever a bare name finds."""
    env = stand_in(tmp_path, program="python")
    gitlab = "set -e\n" + "\n".join(load(GITLAB)[".graphfreeze-base"]["before_script"])
    done = subprocess.run(["sh", "-c", gitlab], capture_output=True, text=True,
                          env={**env, "GRAPHFREEZE_INSTALL": load(GITLAB)["variables"][
                              "GRAPHFREEZE_INSTALL"]})
    assert done.returncode == 6 and done.stderr.strip().startswith("set GRAPHFREEZE_INSTALL to")
    assert not (tmp_path / "args").exists()  # pip never ran


class _Artifacts(http.server.BaseHTTPRequestHandler):
    """GitLab's 'raw artifact file' endpoint: the baseline report of job `convert` on main."""

    def do_GET(self):  # noqa: N802 -- http.server's name
        ok = self.path == "/api/v4/projects/7/jobs/artifacts/main/raw/dist/report.json?job=convert"
        ok = ok and self.headers.get("JOB-TOKEN") == "token"
        self.send_response(200 if ok else 404)
        self.end_headers()
        self.wfile.write(b'{"jobs": []}' if ok else b"")

    def log_message(self, *args):
        pass


@pytest.fixture
def gitlab_api():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Artifacts)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/api/v4"
    server.shutdown()


def test_gitlab_template(tmp_path, gitlab_api):
    template = load(GITLAB)
    batch = template[".graphfreeze-batch"]
    assert batch["artifacts"]["reports"]["junit"] == "dist/junit.xml"
    assert batch["artifacts"]["when"] == "always"
    assert [".graphfreeze-cache/"] in [c["paths"] for c in batch["cache"]]
    assert set(template["variables"]) >= {"GRAPHFREEZE_MANIFEST", "GRAPHFREEZE_CACHE",
                                          "GRAPHFREEZE_ARGS", "GRAPHFREEZE_FAIL_ON"}
    work = tmp_path / "project"
    work.mkdir()
    env = {**stand_in(tmp_path), **{k: str(v) for k, v in template["variables"].items()},
           "CI_API_V4_URL": gitlab_api, "CI_PROJECT_ID": "7", "CI_JOB_NAME": "convert",
           "CI_JOB_TOKEN": "token", "GRAPHFREEZE_BASELINE_REF": "main",
           "GRAPHFREEZE_FAIL_ON": "size > +5%; ops > +0", "GRAPHFREEZE_ARGS": "--jobs 2"}
    script = "set -e\n" + "\n".join(batch["script"])  # the runner runs them as one script
    subprocess.run(["sh", "-c", script], cwd=work, env=env, check=True, capture_output=True)
    assert freeze_args(tmp_path) == [
        "batch", "models.toml", "--cache", ".graphfreeze-cache", "--report", "dist",
        "--baseline", ".graphfreeze-baseline/report.json", "--fail-on", "size > +5%",
        "--fail-on", "ops > +0", "--jobs", "2"]
    assert (work / ".graphfreeze-baseline" / "report.json").read_text() == '{"jobs": []}'
    env["CI_JOB_TOKEN"] = "wrong"  # no baseline: converts without one
    subprocess.run(["sh", "-c", script], cwd=work, env=env, check=True, capture_output=True)
    assert "--baseline" not in freeze_args(tmp_path)


def test_pre_commit_hook():
    (hook,) = load(HOOKS)
    assert hook["id"] == "graphfreeze-scan" and hook["entry"] == "freeze scan"
    assert hook["require_serial"] is True
    files = re.compile(hook["files"])
    assert all(files.search(n) for n in ("a/model.ckpt-1.index", "a/model.ckpt-1.meta", "g.pb",
                                         "m/saved_model.pb", "g.pbtxt", "m.keras", "m.h5"))
    assert not any(files.search(n) for n in ("README.md", "a/model.ckpt-1.data-00000-of-00001",
                                             "a/checkpoint", "m/variables/variables.index.bak"))


def test_the_templates_pass_flags_freeze_takes(freeze):
    help_text = freeze("batch", "--help").output
    for flag in ("--cache", "--report", "--baseline", "--fail-on", "--jobs", "--shard"):
        assert flag in help_text
    assert freeze("scan", "--help").exit_code == 0
