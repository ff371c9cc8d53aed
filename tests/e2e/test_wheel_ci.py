"""The CI templates with the real `freeze`: .venv-wheel is what action.yml's install step
installs (`make test` runs that step as written, extras convert,openvino,ray,llm), and the action's
and GitLab's shell steps run `freeze scan` and `freeze batch` with it on a small manifest, as the
runner runs them (a workspace outside the checkout, no PYTHONPATH)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.e2e.installs import WHEEL, missing, user_env
from tests.test_ci_templates import ACTION, GITLAB, action_step, load

WHY = missing(WHEEL / ".installed", ".venv-wheel", "action.yml")
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))
MANIFEST = """schema_version = 1
[defaults]
targets = ["android", "onnx"]
out_dir = "dist"

[[model]]
name = "iris"
source = "models/iris"
outputs = ["probs"]
"""


def test_the_install_is_the_actions_install_step():
    """`make .venv-wheel` ran the step as action.yml has it now."""
    assert (WHEEL / "install.sh").read_text().strip() == \
        action_step("Install graphfreeze")["run"].strip()


@pytest.fixture
def workspace(samples, tmp_path) -> Path:
    """A repository using the action: models/iris and models.toml."""
    work = tmp_path / "workspace"
    shutil.copytree(samples / "iris", work / "models" / "iris")
    (work / "models.toml").write_text(MANIFEST)
    return work


def runner_env(tmp_path: Path, **env) -> dict:
    return user_env(PATH=f"{WHEEL / 'bin'}:{os.environ['PATH']}", HOME=str(tmp_path), **env)


def run_step(name: str, work: Path, env: dict) -> dict:
    """Run the action's step NAME as the runner does; returns what it wrote to $GITHUB_OUTPUT
    and to its own $GITHUB_STEP_SUMMARY (and its exit code as `exit`)."""
    out, summary = work.parent / f"{name}.out", work.parent / f"{name}.summary"
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                           action_step(name)["run"]], cwd=work, capture_output=True, text=True,
                          env={**env, "GITHUB_OUTPUT": str(out),
                               "GITHUB_STEP_SUMMARY": str(summary)}, timeout=600)
    lines = out.read_text().splitlines() if out.exists() else []
    return {**dict(line.split("=", 1) for line in lines), "exit": done.returncode,
            "summary": summary.read_text() if summary.exists() else "",
            "stderr": done.stderr}


def jobs(report: Path) -> dict[str, tuple]:
    """Job name -> its status and the targets of the artifacts it has, from report.json."""
    return {j["name"]: (j["status"], sorted(a["sidecar"]["target"] for a in j["artifacts"]))
            for j in json.loads(report.read_text())["jobs"]}


def test_the_action_scans_and_converts_a_manifest(workspace, tmp_path):
    env = runner_env(tmp_path, SCAN="models/", MANIFEST="models.toml",
                     CACHE="~/.cache/graphfreeze", BASELINE="", REPORT_DIR="dist",
                     ARGS="--jobs 1", FAIL_ON="")
    scanned = run_step("Scan models", workspace, env)
    assert scanned["exit"] == 0, scanned["stderr"]
    first = run_step("freeze batch", workspace, env)
    assert first["exit"] == 0 and first["status"] == "0", first["stderr"]
    report = workspace / first["report"]
    assert jobs(report) == {"iris": ("ok", ["android", "onnx"])}
    assert (workspace / "dist" / "iris" / "model.ckpt-200.onnx").exists()
    assert any((tmp_path / ".cache" / "graphfreeze").iterdir())  # `~` is the runner's HOME
    summary = first["summary"] + "".join(  # the run page: every step's summary
        run_step(s["name"], workspace, env)["summary"] for s in load(ACTION)["runs"]["steps"]
        if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert summary.count(report.with_name("report.md").read_text()) == 1  # once on the page
    assert run_step("Result", workspace, {**env, "STATUS": first["status"]})["exit"] == 0

    baseline = tmp_path / "baseline" / "report.json"  # what the baseline step downloads
    baseline.parent.mkdir()
    shutil.copy(report, baseline)
    env.update(BASELINE=str(baseline), FAIL_ON="size > +5%\nops > +0\n")
    again = run_step("freeze batch", workspace, env)
    assert again["exit"] == 0 and again["status"] == "0", again["stderr"]
    assert jobs(report) == {"iris": ("cached", ["android", "onnx"])}


class _Artifacts(http.server.BaseHTTPRequestHandler):
    """GitLab's 'raw artifact file' endpoint, serving `report` as the baseline."""

    report = b""

    def do_GET(self):  # noqa: N802 -- http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(self.report)

    def log_message(self, *args):
        pass


def test_the_gitlab_template_converts_a_manifest(workspace, tmp_path):
    template = load(GITLAB)
    script = "set -e\n" + "\n".join(template[".graphfreeze-batch"]["script"])
    env = runner_env(tmp_path, **{**{k: str(v) for k, v in template["variables"].items()},
                                  "GRAPHFREEZE_BASELINE_REF": "main", "GRAPHFREEZE_ARGS": "--jobs 1"},
                     CI_API_V4_URL="http://127.0.0.1:1/api/v4", CI_PROJECT_ID="7",
                     CI_JOB_NAME="convert", CI_JOB_TOKEN="token")
    first = subprocess.run(["sh", "-c", script], cwd=workspace, env=env, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "no baseline" in first.stdout
    report = workspace / "dist" / "report.json"
    assert jobs(report) == {"iris": ("ok", ["android", "onnx"])}
    assert (workspace / ".graphfreeze-cache").is_dir()

    _Artifacts.report = report.read_bytes()
    server = http.server.HTTPServer(("127.0.0.1", 0), _Artifacts)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env.update(CI_API_V4_URL=f"http://127.0.0.1:{server.server_port}/api/v4",
               GRAPHFREEZE_FAIL_ON="size > +5%; ops > +0")
    try:
        again = subprocess.run(["sh", "-c", script], cwd=workspace, env=env,
                               capture_output=True, text=True, timeout=600)
    finally:
        server.shutdown()
    assert again.returncode == 0, again.stderr
    assert "baseline: report.json of job convert on main" in again.stdout
    assert jobs(report) == {"iris": ("cached", ["android", "onnx"])}
    assert json.loads(report.read_text())["baseline"], "compared with the served report"
