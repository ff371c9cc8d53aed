"""report.html links the overlays of each artifact that has them (relative links that resolve),
titled with the `freeze explain` command; an artifact without them gets none."""

from __future__ import annotations

import dataclasses
import json
import re

from graphfreeze.batch.report_html import report_html
from graphfreeze.batch.results import OK, ArtifactRecord, JobResult, Report


def _record(out, name: str, target: str) -> ArtifactRecord:
    car = json.loads((out / f"{name}.json").read_text())
    return ArtifactRecord(target, str(out / name), car["sha256"], car["bytes"],
                          str(out / f"{name}.json"), car)


def test_report_links_each_overlay(explained, tmp_path):
    out = explained / "out"
    plain = _record(out, "model.ckpt-200.pb", "android")
    plain = dataclasses.replace(plain, sidecar={k: v for k, v in plain.sidecar.items()
                                                if k != "explain"})  # as without --explain
    job = JobResult("iris", str(explained), ("android", "tflite-fp16"), OK, 1.0, artifacts=(
        plain, _record(out, "model.ckpt-200.tflite-fp16.tflite", "tflite-fp16")))
    page = report_html(Report(jobs=(job,), seconds=1.0), str(tmp_path)).decode()
    links = re.findall(r'<a class="overlay" href="([^"]+)" title="([^"]+)">(\w+)</a>', page)
    assert [(kind, title) for _, title, kind in links] == [
        ("divergence", "freeze explain model.ckpt-200.tflite-fp16.tflite"),
        ("quantization", "freeze explain model.ckpt-200.tflite-fp16.tflite")]
    for href, _, kind in links:
        assert not href.startswith("/") and (tmp_path / href).resolve() == \
            out / f"model.ckpt-200.tflite-fp16.tflite.{kind}.json"
