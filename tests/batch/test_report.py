import dataclasses
import json
import re
import xml.etree.ElementTree as ET

from graphfreeze.batch import charts
from graphfreeze.batch import report as rep
from graphfreeze.batch.results import (
    CACHED,
    FAILED,
    NOT_RUN,
    OK,
    OVER_BUDGET,
    ArtifactRecord,
    JobResult,
    Report,
)


def sidecar(fmt: str, nodes: int, diff: float | None, top1: float | None = None) -> dict:
    data = {"format": fmt, "file": f"model.{fmt}", "bytes": 1234567, "node_count": nodes,
            "op_counts": {"MatMul": 2, "Relu": 1}, "inputs": [{"name": "x", "shape": [None, 4]}],
            "outputs": [{"name": "probs", "shape": [None, 3]}]}
    if diff is not None:
        metrics = {"max_abs_diff": diff, "mean_abs_diff": diff / 10}
        if top1 is not None:
            metrics["top1_agreement"] = top1
        data["verification"] = {"passed": True, "metrics": {"probs": metrics},
                                "max_abs_diff": {"probs": diff}, "tolerance": 1e-5}
    return data


def artifact(target: str, fmt: str, nodes: int, diff=None, top1=None) -> ArtifactRecord:
    return ArtifactRecord(target=target, path=f"out/{target}/model.{fmt}", sha256="ab" * 32,
                          bytes=1234567, sidecar_path=f"out/{target}/model.{fmt}.json",
                          sidecar=sidecar(fmt, nodes, diff, top1))


JOBS = (
    JobResult("iris", "models/iris.ckpt", ("android", "tflite"), OK, 1.9,
              (artifact("android", "tflite", 12, 3e-7, 1.0), artifact("tflite", "tflite", 12, 2e-7))),
    JobResult("zoo", "gs://bucket/zoo", ("pb",), CACHED, 0.2, (artifact("pb", "pb", 40),)),
    JobResult("bad", "models/bad.pb", ("pb", "tflite"), FAILED, 3.0,
              error="models/bad.pb: op <script>alert(1)</script> & friends unsupported",
              exit_code=3, attempts=2),
    JobResult("half", "models/half", ("pb", "tflite"), FAILED, 2.0,
              (artifact("pb", "pb", 9, 0.0),), error="tflite: conversion failed\nTraceback...",
              exit_code=1),
    JobResult("abc", "models/abc", ("pb",), OK, 0.5, (artifact("pb", "pb", 7, 1e-6, 0.75),)),
)
REPORT = Report(jobs=JOBS, seconds=7.6, shard="1/2", skipped=3)


def test_report_json_round_trips(tmp_path):
    paths = rep.write_reports(REPORT, str(tmp_path))
    assert set(paths) == {"json", "junit", "html"}
    text = open(paths["json"]).read()
    assert json.loads(text) == json.loads(json.dumps(REPORT.as_json()))
    assert text == json.dumps(REPORT.as_json(), indent=2, sort_keys=True) + "\n"
    assert json.loads(text)["counts"] == {"ok": 2, "cached": 1, "failed": 2, "timed-out": 0, "not-run": 0}


def test_junit_testcases_failures_and_counts(tmp_path):
    root = ET.parse(rep.write_reports(REPORT, str(tmp_path))["junit"]).getroot()
    assert root.tag == "testsuites"
    (suite,) = root
    assert suite.tag == "testsuite" and suite.get("name") == "graphfreeze batch"
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert list(cases) == [("iris", "android"), ("iris", "tflite"), ("zoo", "pb"), ("bad", "pb"),
                           ("bad", "tflite"), ("half", "pb"), ("half", "tflite"), ("abc", "pb")]
    failed = {k for k, c in cases.items() if c.find("failure") is not None}
    assert failed == {("bad", "pb"), ("bad", "tflite"), ("half", "tflite")}
    fail = cases["bad", "pb"].find("failure")
    assert fail.get("message") == JOBS[2].error and fail.get("type") == "exit 3"
    assert cases["half", "tflite"].find("failure").get("message") == "tflite: conversion failed"
    assert cases["iris", "android"].get("time") == "0.950"
    assert cases["zoo", "pb"].find("system-out").text == "cached out/pb/model.pb"
    for node in (root, suite):
        assert (node.get("tests"), node.get("failures"), node.get("skipped"), node.get("errors"),
                node.get("time")) == ("8", "3", "0", "0", "7.600")


def test_junit_survives_control_characters():
    job = JobResult("ansi", "m", ("pb",), FAILED, 1.0, error="\x1b[31mred\x1b[0m \x00 ]]>")
    root = ET.fromstring(rep.junit_xml(Report(jobs=(job,), seconds=1.0)))
    assert root.find("testsuite/testcase/failure").get("message") == "\ufffd[31mred\ufffd[0m \ufffd ]]>"


def test_html_failures_first_escaped_self_contained(tmp_path):
    page = open(rep.write_reports(REPORT, str(tmp_path))["html"], encoding="utf-8").read()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; friends" in page
    assert "http://" not in page and "https://" not in page
    rows = re.findall(r'<tr class="(\w+)"><td class="st">\w+</td><td>(\w+)</td><td>(\w+)</td>', page)
    assert rows == [("failed", "bad", "pb"), ("failed", "bad", "tflite"), ("failed", "half", "tflite"),
                    ("ok", "abc", "pb"), ("ok", "half", "pb"), ("ok", "iris", "android"),
                    ("ok", "iris", "tflite"), ("cached", "zoo", "pb")]
    assert "2 ok, 1 cached, 2 failed in 7.6 s (shard 1/2, 3 jobs in other shards)" in page
    assert "1.2 MB" in page and "75.0%" in page and "3e-07" in page
    assert page.count('<tr class="failed err">') == 2  # a job's error once, not per target


def test_writing_twice_gives_identical_bytes(tmp_path):
    first = {k: open(p, "rb").read() for k, p in rep.write_reports(REPORT, str(tmp_path)).items()}
    second = {k: open(p, "rb").read() for k, p in rep.write_reports(REPORT, str(tmp_path)).items()}
    assert first == second
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "report.html", "report.json"]


def test_terminal_lines():
    assert rep.job_line(JOBS[0]).split() == ["ok", "iris", "android,tflite", "1.9", "s"]
    assert rep.job_line(JOBS[0]).startswith("ok      iris ")
    assert rep.job_line(JOBS[1]).startswith("cached  zoo ")
    line = rep.job_line(JOBS[2])
    assert line.startswith("FAILED  bad ") and line.endswith(
        "error: models/bad.pb: op <script>alert(1)</script> & friends unsupported (after 2 attempts)")
    assert "\n" not in rep.job_line(JOBS[3])
    assert rep.summary_line(Report(jobs=(), seconds=0, interrupted=True)) == \
        "0 ok, 0 cached, 0 failed in 0.0 s (interrupted)"


def test_remote_folder():
    """A gs:// folder goes through tf.io.gfile like every other output; ram:// stands in here."""
    from graphfreeze.io.paths import gfile

    paths = rep.write_reports(REPORT, "ram://batch-report/out")
    assert paths["junit"] == "ram://batch-report/out/junit.xml"
    with gfile().GFile(paths["html"], "rb") as f:
        assert f.read() == rep.report_html(REPORT, "ram://batch-report/out")


# -- over budget, not run, failed verification, header, links ------------------------------------

BUDGET = {"target": "android", "rule": "size > +5%",
          "reason": "android: size +11.1% (1.1 MB -> 1.2 MB) breaks `size > +5%`"}
DIVERGENCE = {"available": True, "tolerance": 1e-12, "metric": "max_abs_diff", "compared": 4,
              "not_in_original": 0, "folded_examples": [], "diverged": 1,
              "first": [{"node": "dnn/Relu", "op": "Relu", "max_abs_diff": 1.2e-07,
                         "mean_abs_diff": 9e-09, "agreeing_inputs": ["x (input)"]}]}
MORE = (
    JobResult("big", "models/big", ("android", "tflite"), OVER_BUDGET, 0.3,
              (artifact("android", "pb", 12, 1e-7), artifact("tflite", "tflite", 12, 1e-7)),
              error=BUDGET["reason"], exit_code=8, details={"budget": [BUDGET]}),
    JobResult("strict", "models/strict", ("tflite",), FAILED, 0.04,
              error="out/strict/model.tflite: output 'probs:0' differs by up to 3.73e-08 "
                    "(tolerance 1e-12) against the original", exit_code=5,
              details={"divergence": DIVERGENCE}),
    JobResult("later", "models/later", ("pb",), NOT_RUN, 0.0, error="not run: interrupted",
              attempts=0),
)
RUN = {"started": "2026-01-02 03:04:05 UTC", "manifest": "models.toml", "graphfreeze": "0.1.0",
       "tensorflow": "2.21.0"}
FULL = Report(jobs=JOBS + MORE, seconds=9.0, interrupted=True, run=RUN)


def test_over_budget_and_not_run_everywhere(tmp_path):
    paths = rep.write_reports(FULL, str(tmp_path / "out"))
    data = json.loads(open(paths["json"]).read())
    assert data["counts"]["over-budget"] == 1 and data["run"] == RUN and "baseline" not in data
    assert data["budgets_broken"] == [{"name": "big", **BUDGET}]
    assert "over-budget" not in REPORT.counts()  # only when a job is
    root = ET.parse(paths["junit"]).getroot()
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    assert cases["big", "android"].find("failure").get("type") == "exit 8"
    assert cases["big", "tflite"].find("failure") is None
    assert cases["later", "pb"].find("failure") is None
    assert cases["later", "pb"].find("skipped").get("message") == "not run: interrupted"
    assert root.get("skipped") == "1"
    assert rep.job_line(MORE[0]) == f"OVER-BUDGET big                   {BUDGET['reason']}"
    assert rep.summary_line(FULL) == \
        "2 ok, 1 cached, 3 failed, 1 not-run, 1 over-budget in 9.0 s (interrupted)"
    assert rep.end_lines(FULL) == [f"over budget: big: {BUDGET['reason']}"]


def test_html_header_order_times_links_and_divergence(tmp_path):
    page = rep.report_html(FULL, "out").decode()
    for fact in RUN.values():
        assert f"<dd>{fact}</dd>" in page
    statuses = re.findall(r'<tr class="([\w-]+)"><td class="st">', page)
    assert statuses[0] == "over-budget" and statuses.index("not-run") > statuses.index("failed")
    assert page.index('id="budgets"') < page.index('id="jobs"')
    assert '<td class="n">0.04 s</td>' in page and '<td class="n">3.73e-08</td>' in page
    assert "where it diverges" in page and "<td>dnn/Relu</td>" in page
    assert '<a href="pb/model.pb">model.pb</a>' in page  # relative to the page's folder
    assert 'title="sha256 ' + "ab" * 32 + '"' in page
    assert page.count("<td>3.0 s</td>") == 0 and page.count('<td class="n">3.0 s</td>') == 1


def test_markdown_lists_what_to_act_on_first():
    md = rep.report_md(FULL).decode()
    assert md.startswith("### graphfreeze batch: 1 over budget, 3 failed, 1 not run")
    assert md.index("**Over budget**") < md.index("**Failed:**") < md.index("<details>")
    assert "- :warning: `big` android: size +11.1% (1.1 MB -> 1.2 MB) breaks `size > +5%`" in md
    assert "&lt;script>" in md and "<script>" not in md
    assert md.rstrip().endswith("<sub>graphfreeze 0.1.0 · TensorFlow 2.21.0 · `models.toml` · "
                                "2026-01-02 03:04:05 UTC</sub>")


def test_durations():
    assert [rep.duration(s) for s in (0, 0.004, 0.04, 0.25, 1.94, 12.4)] == \
        ["0.0 s", "<0.01 s", "0.04 s", "0.2 s", "1.9 s", "12 s"]


# -- charts --------------------------------------------------------------------------------------

def with_gpu(record: ArtifactRecord, ops: int, gpu_ops: int) -> ArtifactRecord:
    line = f"{gpu_ops}/{ops} ops"
    return dataclasses.replace(record, sidecar={**record.sidecar, "gpu": {
        "line": line, "ops": ops, "gpu_ops": gpu_ops, "falls_back": []}})


CHARTED = Report(jobs=(
    JobResult("iris", "models/iris.ckpt", ("android", "tflite"), OK, 1.9,
              (with_gpu(artifact("android", "tflite", 12, 3e-7, 1.0), 64, 61),
               artifact("tflite", "tflite", 12, 0.0)), source_bytes=5_000_000),
    JobResult("zoo", "models/zoo", ("pb",), CACHED, 0.004, (artifact("pb", "pb", 40, 2e-6),),
              made_seconds=42.5, source_bytes=2_000_000),
    MORE[1],  # strict: its verification failed, 3.73e-08 over a tolerance of 1e-12
), seconds=3.0)


def bar_titles(page: str, chart: str) -> list[str]:
    """The tooltips of a chart's bars in report.html: `label: value`."""
    svg = re.search(f'<figure id="{chart}">(.*?)</figure>', page, re.S).group(1)
    return re.findall(r'<g class="bar"[^>]*>.*?<title>([^<]*)</title></g>', svg, re.S)


def test_html_charts_show_the_run_as_static_svg(tmp_path):
    page = rep.report_html(CHARTED).decode()
    assert page.index('id="charts"') < page.index('id="jobs"')  # the tables below
    assert "<script" not in page and "http" not in page and "Generated with pygal" not in page
    sizes = bar_titles(page, "chart-size")
    assert sorted(sizes) == sorted(["iris/android: 4.8 MB", "iris/tflite: 4.8 MB",
                                    "zoo/pb: 1.9 MB", "iris/android: 1.2 MB",
                                    "iris/tflite: 1.2 MB", "zoo/pb: 1.2 MB"])
    diffs = bar_titles(page, "chart-diff")
    for said in ("iris/android: 3e-07", "iris/tflite: 0", "zoo/pb: 2e-06", "strict/tflite: 3.7e-08",
                 "strict/tflite: 1e-12", "iris/android: 1e-05"):
        assert said in diffs, diffs
    over = re.search(r'<g class="bar" style="fill: ([^;]+);[^>]*>(?:(?!</g>).)*<title>strict/tflite: '
                     r"3.7e-08</title>", page, re.S)
    assert over and over.group(1) == charts.RED  # over its tolerance: red
    assert "a max |diff| of 0 is drawn at" in page
    assert sorted(bar_titles(page, "chart-time")) == ["iris: 1.9 s", "strict: 0.04 s",
                                                      "zoo (cached): 42 s"]
    assert "iris/android: 95%" in bar_titles(page, "chart-gpu")
    assert "vs baseline" not in page  # no baseline: no empty column
    assert '<td class="n">42 s (cached)</td>' in page  # the time it took when it was made


def test_charts_left_out_without_data():
    page = rep.report_html(Report(jobs=(MORE[2],), seconds=0.0)).decode()
    assert 'id="charts"' not in page and "<svg" not in page
    only_times = rep.report_html(Report(jobs=(JOBS[2],), seconds=3.0)).decode()
    assert 'id="chart-time"' in only_times and 'id="chart-size"' not in only_times


def test_markdown_charts_are_mermaid():
    md = rep.report_md(CHARTED).decode()
    blocks = re.findall(r"```mermaid\n(.*?)```", md, re.S)
    assert len(blocks) == 4 and all("xychart-beta horizontal" in b for b in blocks)
    size, diff, times, gpu = blocks
    assert 'x-axis ["iris/android", "iris/tflite", "zoo/pb"]' in size
    assert 'y-axis "MB" 0 --> 5' in size
    assert "bar [1.177, 1.177, 1.177]" in size and "line [4.768, 4.768, 1.907]" in size
    assert 'y-axis "log10" -13 --> -5' in diff
    assert "bar [-6.52, -13, -5.7, -7.43]" in diff and "line [-5, -5, -5, -12]" in diff
    assert 'x-axis ["iris", "zoo (cached)", "strict"]' in times and "bar [1.9, 42.5, 0.04]" in times
    assert "bar [95.312]" in gpu
    assert "| cached | zoo | pb | 42 s (cached) |" in md
    assert md.index("<details open><summary>At a glance") < md.index("All jobs")
