"""`freeze batch --reduce` in the reports: a failed job's reduced repro is linked from
report.html (relative to the page), named in report.md and in the terminal line."""

from __future__ import annotations

import os

from graphfreeze.batch.report_html import report_html
from graphfreeze.batch.report_md import report_md
from graphfreeze.batch.results import FAILED, OK, JobResult, Report
from graphfreeze.reduce.batch import line

REDUCED = {"target": "tflite", "failure": "TFLite has no kernel for op(s) Erfinv",
           "command": "python m.tflite.reduced.py", "nodes": [190, 2], "trials": 6,
           "seconds": 88.0, "stock_fails_the_same_way": True, "folder": "dist/broken",
           "files": {"pb": "m.tflite.reduced.pb", "script": "m.tflite.reduced.py",
                     "json": "m.tflite.reduced.json"}}


def report() -> Report:
    return Report((JobResult("done", "m/done", ("android",), OK, 1.5),
                   JobResult("broken", "m/broken", ("tflite",), FAILED, 9.0,
                             error="m/broken: TFLite has no kernel for op(s) Erfinv",
                             exit_code=3, details={"reduced": REDUCED})), 10.0)


def test_the_repro_is_linked_from_the_html_report_relative_to_it():
    page = report_html(report(), "reports").decode()
    assert 'href="../dist/broken/m.tflite.reduced.py"' in page
    assert 'href="../dist/broken/m.tflite.reduced.pb"' in page and "190 &rarr; 2 nodes" in page


def test_the_repro_is_named_in_markdown_and_on_the_terminal():
    text = report_md(report()).decode()
    assert "reduced repro: `m.tflite.reduced.py`, 190 → 2 nodes" in text
    said = line(report().jobs[1])
    assert "190 -> 2 nodes, dist/broken/m.tflite.reduced.py" in said and "same way" in said
    assert line(report().jobs[0]) is None


def test_batch_reduce_writes_the_repro_and_every_report_links_it(family, freeze, tmp_path,
                                                                 monkeypatch):
    """The real `freeze batch --reduce` on a manifest of one model TFLite refuses (Erfinv):
    the job fails (exit 7), its repro is written into the job's folder, and report.json,
    report.html and report.md name it."""
    import json
    import shutil

    path, args = family("reduce_cnn_erfinv")
    shutil.copytree(path.parent, tmp_path / "broken")
    (tmp_path / "models.toml").write_text(
        'schema_version = 1\n\n[defaults]\nout_dir = "dist"\n\n[[model]]\nname = "broken"\n'
        f'source = "broken/{path.name}"\noutputs = ["probs"]\ntargets = ["tflite"]\n')
    assert args == ["--outputs", "probs"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))  # report.md too
    result = freeze("batch", "models.toml", "--reduce", "--jobs", "1", "--no-cache")
    assert result.exit_code == 7, result.output
    assert "reduced (tflite):" in result.output and "model.ckpt.tflite.reduced.py" in \
        result.output, result.output
    reduced = {f"model.ckpt.tflite.reduced.{s}" for s in ("pb", "py", "json")}
    assert reduced <= set(os.listdir(tmp_path / "dist" / "broken"))
    (job,) = json.loads((tmp_path / "dist" / "report.json").read_text())["jobs"]
    record = job["details"]["reduced"]
    assert record["target"] == "tflite" and record["stock_fails_the_same_way"], record
    assert set(record["files"].values()) == reduced, record
    page = (tmp_path / "dist" / "report.html").read_text()
    assert 'href="broken/model.ckpt.tflite.reduced.py"' in page, page
    assert "reduced repro: `model.ckpt.tflite.reduced.py`" in \
        (tmp_path / "dist" / "report.md").read_text()
