"""The reports of a batch run: report.json, junit.xml (for CI test views), report.html
(report_html.py), report.md (report_md.py: a PR comment or $GITHUB_STEP_SUMMARY), and the
terminal lines. Pure formatting of `results.Report`: the same Report gives the same bytes."""

from __future__ import annotations

import json
import os
import re
import time
import xml.etree.ElementTree as ET

from graphfreeze.batch import report_html as page
from graphfreeze.batch import report_md as md
from graphfreeze.batch.job_names import FILES
from graphfreeze.batch.results import (  # noqa: F401 -- rows, summary_line: this module's API
    CACHED,
    NOT_RUN,
    OK,
    OVER_BUDGET,
    SUITE,
    UNSUCCESSFUL,
    ArtifactRecord,
    JobResult,
    Report,
    duration,
    one_line,
    rows,
    summary_line,
)
from graphfreeze.io import storage

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")  # invalid in XML 1.0


def write_reports(report: Report, folder: str, markdown: bool | None = None,
                  flag: str = "--report") -> dict[str, str]:
    """Write report.json, junit.xml, report.html and report.md into `folder` (local or gs://),
    all renamed into place together; returns {"json", "junit", "html", "md"} -> path. report.md
    is written when `markdown`, by default when there is a baseline or $GITHUB_STEP_SUMMARY.
    `flag`: what named `folder`, for the errors."""
    if markdown is None:
        markdown = report.baseline is not None or bool(os.environ.get("GITHUB_STEP_SUMMARY"))
    paths = {key: storage.join(folder, FILES[key]) for key in ("json", "junit", "html")}
    data = {"json": report_json(report), "junit": junit_xml(report),
            "html": report_html(report, folder)}
    if markdown:
        paths["md"] = storage.join(folder, FILES["md"])
        data["md"] = report_md(report)
    with storage.Transaction(force=True) as txn:
        for key, path in paths.items():
            txn.put(path, data[key], flag)
        txn.commit()
    return paths


def one_run(prepared, written) -> bytes:
    """`freeze --report PATH`: the run of `prepared` (convert.Prepared) that made `written`
    (convert.Written, not yet committed) as a one-job report, in the form PATH's suffix names
    (.html, .md or .json), as `freeze batch` writes them."""
    from graphfreeze.batch.runner import run_facts, source_bytes

    request, path = prepared.request, prepared.run.report
    seconds = time.monotonic() - prepared.started
    records = tuple(ArtifactRecord(w.target, w.path, w.sidecar.sha256, w.sidecar.bytes,
                                   w.sidecar_path, w.sidecar.to_json()) for w in written)
    job = JobResult(prepared.source.stem(request.source, prepared.source_options), request.source,
                    request.targets, OK, seconds, records, source_bytes=source_bytes(prepared))
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(time.time() - seconds))
    report = Report((job,), seconds, run={**run_facts(started, None),
                                          "title": f"freeze {request.source}"})
    if path.lower().endswith(".md"):
        return report_md(report)
    if path.lower().endswith(".json"):
        return report_json(report)
    return report_html(report, storage.dirname(path))


def report_html(report: Report, folder: str = "") -> bytes:
    """report.html's bytes (report_html.py); links relative to `folder`, where it goes."""
    return page.report_html(report, folder)


def report_md(report: Report) -> bytes:
    return md.report_md(report)


def report_json(report: Report) -> bytes:
    return (json.dumps(report.as_json(), indent=2, sort_keys=True) + "\n").encode()


def _seconds(job: JobResult) -> float:
    """A junit row's share of its job's time."""
    return job.seconds / len(rows(job))


# -- junit.xml -----------------------------------------------------------------------------------

def junit_xml(report: Report) -> bytes:
    """JUnit XML as GitLab, Jenkins and GitHub test reporters read it: testsuites > testsuite >
    testcase(classname=job, name=target, time) > failure(message, type)."""

    def clean(text: str) -> str:
        return _NOT_XML.sub("\ufffd", text)

    cases, failures, skipped = [], 0, 0
    for job in report.jobs:
        for target, artifact, failed in rows(job):
            case = ET.Element("testcase", classname=clean(job.name), name=clean(target),
                              time=f"{_seconds(job):.3f}")
            if failed and job.status == NOT_RUN:  # never started: skipped, not failed
                skipped += 1
                ET.SubElement(case, "skipped", message=clean(one_line(job.error)))
            elif failed:
                failures += 1
                error = clean(one_line(job.error))
                fail = ET.SubElement(case, "failure", message=error, type=f"exit {job.exit_code}")
                fail.text = clean(f"{error}\nsource: {job.source}\nattempts: {job.attempts}")
            elif artifact is not None:
                out = ET.SubElement(case, "system-out")
                out.text = clean(("cached " if job.status == CACHED else "") + artifact.path)
            cases.append(case)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0",
              "skipped": str(skipped),
              "time": f"{report.seconds:.3f}"}
    root = ET.Element("testsuites", name="graphfreeze", **counts)
    suite = ET.SubElement(root, "testsuite", name=SUITE, **counts)
    suite.extend(cases)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


# -- terminal ------------------------------------------------------------------------------------

def job_line(result: JobResult) -> str:
    """The plain log line of a finished job: `ok      iris        android,tflite  1.9 s`."""
    tries = f" (after {result.attempts} attempts)" if result.attempts > 1 else ""
    if result.status == OVER_BUDGET:
        return f"{'OVER-BUDGET'} {result.name:<20}  {one_line(result.error)}"
    if result.status in UNSUCCESSFUL:
        text = one_line(result.error)
        text = text if text.startswith(("internal error", "not run")) else f"error: {text}"
        removed = (result.details or {}).get("removed_stale")
        stale = f" (removed {len(removed)} stale file(s) of an earlier run)" if removed else ""
        return f"{result.status.upper():<8}{result.name:<20}  {text}{tries}{stale}"
    targets = ",".join(result.targets) or "-"
    return f"{result.status:<8}{result.name:<20}  {targets:<28}  {result.seconds:.1f} s{tries}"


def end_lines(report: Report, limit: int = 10) -> list[str]:
    """What the terminal shows above the summary: broken budgets first, then the changes
    against the baseline beyond noise (at most `limit`), new and removed models, notes."""
    from graphfreeze.batch.baseline import fmt_change

    out = [f"over budget: {job.name}: {b['reason']}" for job in report.over_budget
           for b in job.budget]
    base = report.baseline
    if base is None:
        if report.run.get("budgets"):
            out.append(f"budgets {report.run['budgets']}")
        return out
    out.append(f"baseline {base['path']}: {base['significant']} changed beyond noise (of "
               f"{base['compared']} compared), {len(base['new'])} new, "
               f"{len(base['removed'])} removed")
    shown = [c for c in base["changes"] if c["significant"]]
    for change in shown[:limit]:
        cells = [f"{m} {fmt_change(m, e)}" for m, e in change["metrics"].items()
                 if e["significant"]]
        out.append(f"  {change['name'] + '/' + change['target']:<28}  {', '.join(cells)}")
    if len(shown) > limit:
        out.append(f"  ... {len(shown) - limit} more in report.html")
    for s in base["status_changes"]:
        out.append(f"  {s['name']}: {s['before']} -> {s['after']}")
    for what in ("new", "removed"):
        if base[what]:
            out.append(f"  {what}: {', '.join(base[what])}")
    out += [f"  note: {note}" for note in base["notes"]]
    return out
