"""`freeze --report PATH` typed in the model's folder: the run as `freeze batch` reports it (one
job), written with the artifacts; .html with its charts as static SVG, .md with Mermaid charts,
.json; an existing report refused before any work."""

from __future__ import annotations

import json
import re

from graphfreeze.batch.baseline import size

from .test_convert_command import freeze

RUN = ("--ckpt", "model.ckpt-200", "--outputs", "probs")


def _bars(page: str, chart: str) -> set[tuple[str, str]]:
    """(label, value) of each bar's tooltip in the chart `chart` of report.html."""
    figure = re.search(rf'<figure id="{chart}">(.*?)</figure>', page, re.S)
    assert figure, f"no {chart} in the page"
    return set(re.findall(r"<title>([^<:]+/[^<:]+): ([^<]+)</title>", figure.group(1)))


def test_an_html_report_charts_the_run(sample):
    folder = sample("iris")
    done = freeze(folder, *RUN, "--target", "tflite,onnx", "-o", "art/", "--report",
                  "out/report.html")
    assert done.returncode == 0, done.stderr
    assert "report: out/report.html" in done.stdout
    page = (folder / "out" / "report.html").read_text()
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "<h1>freeze model.ckpt-200</h1>" in page
    sizes, diffs = _bars(page, "chart-size"), _bars(page, "chart-diff")
    for target, suffix in (("tflite", ".tflite"), ("onnx", ".onnx")):
        car = json.loads((folder / "art" / f"model.ckpt-200{suffix}.json").read_text())
        label = f"model.ckpt-200/{target}"
        assert (label, size(car["bytes"])) in sizes, sizes
        diff = max(m["max_abs_diff"] for m in car["verification"]["metrics"].values())
        assert float(f"{diff:.2g}") in {float(v) for name, v in diffs if name == label}, \
            (diff, diffs)
        assert f'href="../art/model.ckpt-200{suffix}"' in page  # the table links the artifact


def test_a_markdown_report_has_mermaid_charts_and_force_replaces_it(sample):
    folder = sample("iris")
    (folder / "report.md").write_text("an old report\n")
    done = freeze(folder, *RUN, "--target", "tflite", "--report", "report.md", "--force")
    assert done.returncode == 0, done.stderr
    text = (folder / "report.md").read_text()
    assert text.startswith("### freeze model.ckpt-200: all ok")
    blocks = re.findall(r"```mermaid\n(.*?)```", text, re.S)
    assert len(blocks) >= 2 and all("xychart-beta" in b for b in blocks)
    assert '"model.ckpt-200/tflite"' in blocks[0]


def test_a_json_report_is_batch_reports_record(sample):
    folder = sample("iris")
    done = freeze(folder, *RUN, "--target", "tflite", "--no-verify", "--report", "r.json")
    assert done.returncode == 0, done.stderr
    report = json.loads((folder / "r.json").read_text())
    (job,) = report["jobs"]
    assert job["status"] == "ok" and job["source"] == "model.ckpt-200"
    assert [a["path"] for a in job["artifacts"]] == ["model.ckpt-200.tflite"]
    assert job["artifacts"][0]["bytes"] == (folder / "model.ckpt-200.tflite").stat().st_size


def test_an_existing_report_or_a_wrong_suffix_is_refused_before_any_work(sample):
    folder = sample("iris")
    (folder / "report.html").write_text("kept\n")
    done = freeze(folder, *RUN, "--report", "report.html")
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip() == ("error: report.html: already exists; pass --force to "
                                   "overwrite it"), done.stderr
    done = freeze(folder, *RUN, "--report", "report.txt")
    assert done.returncode == 6, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: freeze: --report report.txt: name a .html, .md or .json file"]
    done = freeze(folder, *RUN, "-o", "out/", "--report", "out/model.ckpt-200.pb.json")
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: out/model.ckpt-200.pb.json: the run writes an artifact or sidecar there; choose "
        "another --report"]
    assert (folder / "report.html").read_text() == "kept\n"
    assert not list(folder.glob("model.ckpt-200.*.json")) and not (folder / "report.txt").exists()
    assert not (folder / "out").exists()
