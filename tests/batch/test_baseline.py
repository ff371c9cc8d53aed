"""`freeze batch --baseline`: a real run on the sample models compared with copies of its own
report.json, edited (a model smaller, nodes fewer, a target and a model added or dropped, another
schema version and manifest). Converted once per session (a shared cache: the other modules'
runs of this workspace are cache hits), then every run is a cached re-run without TensorFlow."""

from __future__ import annotations

import copy
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from filelock import FileLock
from graphfreeze.batch import baseline as baselib

from .test_batch import cli, put, report_of

MANIFEST = """\
schema_version = 1
[defaults]
targets = ["android"]
out_dir = "dist"
[[model]]
source = "iris"
outputs = ["probs"]
targets = ["android", "tflite"]
[[model]]
name = "tf2"
source = "tf2_savedmodel"
"""
STRICT = """\
schema_version = 1
[defaults]
out_dir = "strict"
[[model]]
name = "iris_strict"
source = "iris"
outputs = ["probs"]
targets = ["tflite"]
tolerance = 1e-12
"""


def cache_of(ws: Path) -> Path:
    """The workspace's batch cache, in the folder every pytest-xdist worker of this run shares
    (conftest's _shared): a worker that converts the workspace after another gets cache hits."""
    return (ws.parent.parent if os.environ.get("PYTEST_XDIST_WORKER") else ws.parent) / \
        "baseline-cache"


def run_batch(ws: Path, *args, manifest: str = "models.toml", env: dict | None = None):
    cache = cache_of(ws)
    if env is None:
        return cli(ws, "batch", manifest, "--jobs", "2", "--cache", cache, *args)
    old = dict(os.environ)
    os.environ.update(env)
    try:
        return cli(ws, "batch", manifest, "--jobs", "2", "--cache", cache, *args)
    finally:
        os.environ.clear()
        os.environ.update(old)


@pytest.fixture(scope="module")
def converted(samples, other_samples, tmp_path_factory):
    """(workspace, its first report.json as a dict): iris (android, tflite) and tf2 (android)."""
    ws = tmp_path_factory.getbasetemp() / "baseline-ws"
    if not ws.exists():
        ws.mkdir()
        put(ws, samples, "iris")
        put(ws, other_samples, "tf2_savedmodel")
        (ws / "models.toml").write_text(MANIFEST)
        (ws / "strict.toml").write_text(STRICT)
    with FileLock(f"{cache_of(ws)}.lock"):  # one worker converts, the other waits for its hits
        done = run_batch(ws)
    assert done.returncode == 0, done.stdout + done.stderr
    return ws, report_of(ws / "dist")


def write_baseline(ws: Path, data: dict, name: str) -> str:
    path = ws / "baselines" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data))
    return str(path.relative_to(ws))


@pytest.fixture(scope="module")
def edited_baseline(converted) -> str:
    """A baseline where iris/android was 10 % smaller with 2 Relu nodes fewer, iris had no
    tflite target, and a model `gone` existed."""
    ws, report = converted
    data = copy.deepcopy(report)
    iris = next(j for j in data["jobs"] if j["name"] == "iris")
    android = iris["artifacts"][0]
    android["bytes"] = int(android["bytes"] / 1.111)
    android["sidecar"]["node_count"] -= 2
    android["sidecar"]["op_counts"]["Relu"] -= 2
    iris["targets"], iris["artifacts"] = ["android"], [android]
    data["jobs"].append({"name": "gone", "source": "gone", "targets": ["android"], "status": "ok",
                         "seconds": 1.0, "artifacts": []})
    return write_baseline(ws, data, "edited.json")


def test_unchanged_baseline_nothing_changed(converted):
    ws, report = converted
    done = run_batch(ws, "--baseline", write_baseline(ws, report, "same.json"))
    assert done.returncode == 0, done.stderr
    assert "baseline baselines/same.json: 0 changed beyond noise (of 3 compared), 0 new, " \
        "0 removed" in done.stdout.splitlines()
    now = report_of(ws / "dist")
    assert now["baseline"]["significant"] == 0 and now["baseline"]["notes"] == []
    assert {j["status"] for j in now["jobs"]} == {"cached"}
    md = (ws / "dist" / "report.md").read_text()
    assert md.startswith("### graphfreeze batch: all ok, nothing changed beyond noise")


def test_changes_new_and_removed_in_every_report(converted, edited_baseline, tmp_path):
    ws, _ = converted
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    start = time.monotonic()
    done = run_batch(ws, "--baseline", edited_baseline, env={"GITHUB_STEP_SUMMARY": str(summary)})
    print(f"cached run with a baseline: {time.monotonic() - start:.2f} s")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "baseline baselines/edited.json: 1 changed beyond noise (of 2 compared), 1 new, " \
        "1 removed" in lines
    (row,) = [line for line in lines if line.startswith("  iris/android")]
    assert "size ▲ +" in row and "(+11.1%)" in row and "ops ▲ +2" in row
    assert "  new: iris/tflite" in lines and "  removed: gone" in lines
    base = report_of(ws / "dist")["baseline"]
    first = base["changes"][0]
    assert (first["name"], first["target"], first["significant"]) == ("iris", "android", True)
    assert first["metrics"]["ops"]["change"] == 2 and first["op_types"] == {"Relu": 2}
    assert first["metrics"]["max_diff"]["significant"] is False
    assert (base["new"], base["removed"]) == (["iris/tflite"], ["gone"])
    md = (ws / "dist" / "report.md").read_text()
    assert "| iris | android | :red_circle: ▲ +" in md and "new: `iris/tflite`" in md
    assert summary.read_text() == "earlier step\n" + md
    page = (ws / "dist" / "report.html").read_text()
    assert "Against the baseline" in page and "Relu +2" in page and "&#9650;" in page


@pytest.mark.parametrize("rule, code", [("size > +5%", 8), ("ops > +0", 8), ("size > +50%", 0),
                                        ("max_diff > +0", 0), ("size < -1%", 0)])
def test_budget_rules(converted, edited_baseline, rule, code):
    ws, _ = converted
    done = run_batch(ws, "--baseline", edited_baseline, "--fail-on", rule)
    assert done.returncode == code, done.stdout + done.stderr
    jobs = {j["name"]: j for j in report_of(ws / "dist")["jobs"]}
    if code == 0:
        assert {j["status"] for j in jobs.values()} == {"cached"}
        return
    iris = jobs["iris"]
    assert (iris["status"], iris["exit_code"], jobs["tf2"]["status"]) == (
        "over-budget", 8, "cached")
    assert iris["details"]["budget"][0]["rule"] == rule and "\n" not in iris["error"]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("OVER-BUDGET iris") and rule in lines[0]
    over = next(i for i, line in enumerate(lines) if line.startswith("over budget: iris: android"))
    assert over < next(i for i, line in enumerate(lines) if line.startswith("baseline "))
    assert "1 over-budget in" in done.stdout
    md = (ws / "dist" / "report.md").read_text()
    assert md.startswith("### graphfreeze batch: 1 over budget")
    assert md.index("**Over budget**") < md.index("**Against the baseline**")
    junit = (ws / "dist" / "junit.xml").read_text()
    assert 'type="exit 8"' in junit and junit.count("<failure") == 1  # iris/android only


def test_manifest_fail_on_and_baseline_keys(converted, edited_baseline):
    ws, _ = converted
    text = MANIFEST.replace('out_dir = "dist"', f'out_dir = "dist"\nfail_on = ["ops > +0"]\n'
                                                f'baseline = "{edited_baseline}"')
    (ws / "budget.toml").write_text(text)
    done = run_batch(ws, manifest="budget.toml")
    assert done.returncode == 8, done.stdout + done.stderr
    assert report_of(ws / "dist")["jobs"][0]["details"]["budget"][0]["rule"] == "ops > +0"
    (ws / "badrule.toml").write_text(text.replace("ops > +0", "ops >= 1"))
    done = run_batch(ws, manifest="badrule.toml")
    assert done.returncode == 6 and done.stdout == ""
    assert done.stderr.strip().startswith("error: badrule.toml:") and "'ops >= 1'" in done.stderr


def test_other_schema_and_manifest_compared_as_far_as_it_goes(converted):
    ws, report = converted
    data = copy.deepcopy(report)
    data["schema_version"] = 2
    data["run"]["manifest"], data["run"]["tensorflow"] = "other.toml", "2.99.0"
    for job in data["jobs"]:
        job.pop("seconds")
        for a in job["artifacts"]:
            a["sidecar"].pop("op_counts", None)
    done = run_batch(ws, "--baseline", write_baseline(ws, data, "v2.json"))
    assert done.returncode == 0, done.stderr
    assert "  note: the baseline baselines/v2.json has schema_version 2, this report 1: " \
        "compared the fields both have" in done.stdout
    assert "  note: manifest other.toml in the baseline, models.toml now" in done.stdout
    assert "  note: TensorFlow 2.99.0 in the baseline" in done.stdout
    assert report_of(ws / "dist")["baseline"]["compared"] == 3


@pytest.mark.parametrize("content, message", [
    (None, "error: --baseline baselines/missing.json: no such file"),
    ("{", "error: --baseline baselines/missing.json: not JSON"),
    ('{"schema_version": 1}', "error: --baseline baselines/missing.json: not a `freeze batch` "
                              "report.json")])
def test_bad_baseline_is_one_line_before_any_work(converted, content, message):
    ws, _ = converted
    path = ws / "baselines" / "missing.json"
    path.parent.mkdir(exist_ok=True)
    path.unlink(missing_ok=True)
    if content is not None:
        path.write_text(content)
    before = (ws / "dist" / "report.json").stat().st_mtime_ns
    done = run_batch(ws, "--baseline", "baselines/missing.json")
    assert done.returncode == 6 and done.stdout == ""
    assert done.stderr.strip().startswith(message) and len(done.stderr.strip().splitlines()) == 1
    assert (ws / "dist" / "report.json").stat().st_mtime_ns == before


def test_accuracy_and_latency_compared_when_both_have_them(converted):
    """--verify-data's accuracy and --benchmark's latency, as their sidecar keys say."""
    _, report = converted
    now, then = copy.deepcopy(report), copy.deepcopy(report)
    for data, top1, median in ((then, 0.90, 10.0), (now, 0.88, 12.5)):
        car = data["jobs"][0]["artifacts"][0]["sidecar"]
        car["verification"]["accuracy"] = {"original": 0.9, "artifact": top1,
                                           "drop": 0.9 - top1}
        car["latency"] = {"median_ms": median, "p90_ms": median * 1.2, "runs": 50, "threads": 1,
                          "cpu": "x86_64", "runtime": "tensorflow"}
    then["jobs"][0]["artifacts"][1]["sidecar"]["latency"] = {"median_ms": 10.0}  # one side only
    base = baselib.compare(now, then, "b.json")
    metrics = base["changes"][0]["metrics"]
    assert metrics["top1"]["significant"] and round(metrics["top1"]["change"], 6) == -0.02
    assert metrics["latency"]["significant"] and metrics["latency"]["relative"] == 0.25
    assert "latency" not in base["changes"][1]["metrics"]
    assert baselib.fmt_change("top1", metrics["top1"]) == "▼ -2.00 pp (88.00%)"
    from graphfreeze.batch import budgets

    deltas = baselib.job_deltas(baselib.index(then), now["jobs"][0])
    assert [b["rule"] for b in budgets.check(budgets.parse_all(
        ["top1 < -0.5%", "top1 < -5%", "latency > +10%", "latency > +30%"]), deltas)] == \
        ["top1 < -0.5%", "latency > +10%"]


def test_cached_run_with_baseline_imports_no_tensorflow(converted, edited_baseline):
    from .test_batch import CHECK_IMPORTS, HEAVY

    ws, _ = converted
    run_batch(ws)  # warm
    code = f"HEAVY = set({sorted(HEAVY)!r})\n" + CHECK_IMPORTS
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code, "batch", "models.toml", "--cache",
                           str(cache_of(ws)), "--baseline", edited_baseline,
                           "--fail-on", "size > +50%"], cwd=ws, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "heavy modules: ", done.stderr
    shutil.rmtree(ws / "baselines" / "unused", ignore_errors=True)


@pytest.mark.parametrize("job", [
    {"name": "iris", "targets": 5}, {"name": "iris", "artifacts": 5}, {"name": "iris", "status": [1]},
    {"name": "iris", "artifacts": [{"target": "android", "sidecar": [1]}]},
    {"name": "iris", "artifacts": [{"target": "android", "sidecar": {
        "verification": {"metrics": [1]}, "op_counts": {"Relu": 2.0}}}]},
])
def test_a_baseline_of_the_wrong_shape_inside_is_compared_as_far_as_it_goes(job):
    """Fields of the wrong type are left out, never trusted: no internal error after the run."""
    now = {"schema_version": 1, "jobs": [{"name": "iris", "status": "ok", "targets": ["android"],
                                          "artifacts": [{"target": "android", "bytes": 10,
                                                         "sidecar": {"op_counts": {"Relu": 3}}}]}]}
    section = baselib.compare(now, {"schema_version": 1, "jobs": [job]}, "base.json")
    assert section["compared"] in (0, 1) and "iris" not in section["new"]
    for change in section["changes"]:
        assert all(isinstance(n, int) for n in change.get("op_types", {}).values())
