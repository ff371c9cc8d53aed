"""`freeze batch --reduce` in the reports: a failed job's reduced repro is linked from
report.html (relative to the page), named in report.md and in the terminal line."""

from __future__ import annotations

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
