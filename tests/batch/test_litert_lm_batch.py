"""`freeze batch` with a manifest entry naming the litert-lm target, run from the manifest's
folder: the tiny GPT-2 of models/causal_lms.py converts like any other target (its stage options
given as manifest keys), and report.json, report.html and report.md show the token agreement
and the decode tokens/s its verification measured."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

FREEZE = str(Path(sys.executable).with_name("freeze"))
MANIFEST = """\
schema_version = 1

[[model]]
name = "gpt2"
source = "lm/model.keras"
targets = ["litert-lm"]
prefill_lengths = [8]
max_cache_len = 24
max_new_tokens = 8
"""


def test_manifest_entry_with_litert_lm_reports_agreement_and_tokens_per_second(
        causal_lms, tmp_path):
    (tmp_path / "lm").mkdir()
    shutil.copy(causal_lms / "gpt2" / "model.keras", tmp_path / "lm")
    (tmp_path / "models.toml").write_text(MANIFEST)
    summary = tmp_path / "summary.md"  # as in GitHub Actions: report.md is written too
    done = subprocess.run([FREEZE, "batch", "models.toml", "--cache", "cache"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
                               "GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "dist" / "report.json").read_text())
    (job,) = report["jobs"]
    (artifact,) = job["artifacts"]
    assert (job["status"], artifact["target"]) == ("ok", "litert-lm"), job
    car = artifact["sidecar"]
    assert car["signatures"] == ["prefill_8", "decode"] and car["layout"]["cache_len"] == 24
    check = car["verification"]
    assert check["passed"] and check["token_agreement"] == 1.0, check
    assert check["new_tokens"] == 8 and [p["prompt_tokens"] for p in check["prompts"]] == [4, 8]
    speeds = sorted(p["tokens_per_second"] for p in check["prompts"])
    assert speeds[0] <= check["tokens_per_second"] <= speeds[-1] and speeds[0] > 0, check
    shown = f"{check['tokens_per_second']:.0f}"
    page = html.unescape((tmp_path / "dist" / "report.html").read_text())
    assert "Language models" in page and "100.0% (tokens)" in page, page
    assert f"<td>gpt2</td><td>litert-lm</td><td>100.0% (at least 100%)</td><td>{shown}</td>" \
        in page, page
    md = (tmp_path / "dist" / "report.md").read_text()
    assert f"| gpt2 | litert-lm | 100.0% (at least 100%) | {shown} |" in md, md
    assert summary.read_text() == md
