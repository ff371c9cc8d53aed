"""The reports of a batch run: report.json, junit.xml (for CI test views), report.html, and the
one-line log lines. Pure formatting of `results.Report`: the same Report gives the same bytes."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET

from graphfreeze import storage
from graphfreeze.batch.results import (
    CACHED,
    FAILED,
    OK,
    UNSUCCESSFUL,
    ArtifactRecord,
    JobResult,
    Report,
)

SUITE = "graphfreeze batch"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")  # invalid in XML 1.0


def write_reports(report: Report, folder: str) -> dict[str, str]:
    """Write report.json, junit.xml and report.html into `folder` (local or gs://), all renamed
    into place together; returns {"json", "junit", "html"} -> path."""
    paths = {"json": storage.join(folder, "report.json"),
             "junit": storage.join(folder, "junit.xml"),
             "html": storage.join(folder, "report.html")}
    data = {"json": report_json(report), "junit": junit_xml(report), "html": report_html(report)}
    with storage.Transaction(force=True) as txn:
        for key, path in paths.items():
            txn.put(path, data[key])
        txn.commit()
    return paths


def report_json(report: Report) -> bytes:
    return (json.dumps(report.as_json(), indent=2, sort_keys=True) + "\n").encode()


# -- one row per job and target ------------------------------------------------------------------

def rows(job: JobResult) -> list[tuple[str, ArtifactRecord | None, bool]]:
    """(target, its artifact or None, failed?) for each target the job asked for (plus any
    artifact of a target not asked for). A failed job fails the targets it made no artifact
    for -- all of them if it made one for each; a job with no targets at all gets one row "-"."""
    made = {a.target: a for a in reversed(job.artifacts)}  # the first artifact of a target wins
    targets = list(dict.fromkeys([*job.targets, *made])) or ["-"]
    missing = [t for t in targets if t not in made]
    failing = set(missing or targets) if job.status in UNSUCCESSFUL else set()
    return [(t, made.get(t), t in failing) for t in targets]


def _one_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else "unknown error"


def _seconds(job: JobResult) -> float:
    """A row's share of its job's time."""
    return job.seconds / len(rows(job))


# -- junit.xml -----------------------------------------------------------------------------------

def junit_xml(report: Report) -> bytes:
    """JUnit XML as GitLab, Jenkins and GitHub test reporters read it: testsuites > testsuite >
    testcase(classname=job, name=target, time) > failure(message, type)."""

    def clean(text: str) -> str:
        return _NOT_XML.sub("\ufffd", text)

    cases, failures = [], 0
    for job in report.jobs:
        for target, artifact, failed in rows(job):
            case = ET.Element("testcase", classname=clean(job.name), name=clean(target),
                              time=f"{_seconds(job):.3f}")
            if failed:
                failures += 1
                error = clean(_one_line(job.error))
                fail = ET.SubElement(case, "failure", message=error, type=f"exit {job.exit_code}")
                fail.text = clean(f"{error}\nsource: {job.source}\nattempts: {job.attempts}")
            elif artifact is not None:
                out = ET.SubElement(case, "system-out")
                out.text = clean(("cached " if job.status == CACHED else "") + artifact.path)
            cases.append(case)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0", "skipped": "0",
              "time": f"{report.seconds:.3f}"}
    root = ET.Element("testsuites", name="graphfreeze", **counts)
    suite = ET.SubElement(root, "testsuite", name=SUITE, **counts)
    suite.extend(cases)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


# -- report.html ---------------------------------------------------------------------------------

def _size(n: int | None) -> str:
    if n is None:
        return ""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""  # unreachable


def _verification(sidecar: dict) -> tuple[str, str]:
    """(max |diff|, top-1) over all outputs, "" when not verified."""
    metrics = (sidecar.get("verification") or {}).get("metrics") or {}
    diffs = [m["max_abs_diff"] for m in metrics.values() if "max_abs_diff" in m]
    top1 = [m["top1_agreement"] for m in metrics.values() if "top1_agreement" in m]
    return (f"{max(diffs):.2g}" if diffs else "", f"{min(top1):.1%}" if top1 else "")


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#222}
h1{font-size:1.3em;margin:0 0 .3em}p.sum{margin:0 0 1em;color:#444}
table{border-collapse:collapse;width:100%}
th,td{padding:.35em .7em;border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}
th{background:#f5f5f5;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.st{font-weight:600;text-transform:uppercase;font-size:.85em}
.ok .st{color:#1a7f37}.cached .st{color:#57606a}.failed .st{color:#cf222e}
tr.failed{background:#fff5f5}tr.err td{border-top:0;color:#cf222e;font-family:monospace;
padding-top:0;white-space:pre-wrap;word-break:break-word}td.src{color:#57606a;
word-break:break-all}
"""
_HEAD = ("status", "model", "target", "source", "size", "nodes", "max |diff|", "top-1", "time")


def report_html(report: Report) -> bytes:
    """One self-contained page (inline CSS, no scripts, no network): summary, then a row per job
    and target, failed ones first (a failed job's made targets show ok), then by name and target."""
    e = html.escape
    entries = sorted(((not failed, job.name, target, i, job, artifact, failed)
                      for i, job in enumerate(report.jobs)
                      for target, artifact, failed in rows(job)), key=lambda r: r[:4])
    body = []
    for _, _, target, _, job, artifact, failed in entries:
        status = job.status if failed else OK if job.status in UNSUCCESSFUL else job.status
        sidecar = artifact.sidecar if artifact else {}
        diff, top1 = _verification(sidecar)
        cells = [(status, "st"), (job.name, ""), (target, ""),
                 (job.source, "src"), (_size(artifact.bytes if artifact else None), "n"),
                 (str(sidecar.get("node_count", "")), "n"), (diff, "n"), (top1, "n"),
                 (f"{_seconds(job):.1f} s", "n")]
        tds = "".join(f'<td class="{c}">{e(v)}</td>' if c else f"<td>{e(v)}</td>"
                      for v, c in cells)
        body.append(f'<tr class="{e(status)}">{tds}</tr>')
        if failed:
            body.append(f'<tr class="failed err"><td></td><td colspan="{len(_HEAD) - 1}">'
                        f"{e(_one_line(job.error))}</td></tr>")
    head = "".join(f"<th>{e(h)}</th>" for h in _HEAD)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{e(SUITE)}</title><style>{_CSS}</style></head>
<body><h1>{e(SUITE)}</h1>
<p class="sum">{e(summary_line(report))}</p>
<table><thead><tr>{head}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody></table></body></html>
"""
    return page.encode()


# -- terminal ------------------------------------------------------------------------------------

def job_line(result: JobResult) -> str:
    """The plain log line of a finished job: `ok      iris        android,tflite  1.9 s`."""
    tries = f" (after {result.attempts} attempts)" if result.attempts > 1 else ""
    if result.status in UNSUCCESSFUL:
        text = _one_line(result.error)
        text = text if text.startswith(("internal error", "not run")) else f"error: {text}"
        removed = (result.details or {}).get("removed_stale")
        stale = f" (removed {len(removed)} stale file(s) of an earlier run)" if removed else ""
        return f"{result.status.upper():<8}{result.name:<20}  {text}{tries}{stale}"
    targets = ",".join(result.targets) or "-"
    return f"{result.status:<8}{result.name:<20}  {targets:<28}  {result.seconds:.1f} s{tries}"


def summary_line(report: Report) -> str:
    """`3 ok, 1 cached, 1 failed in 12.3 s (shard 1/4, 6 jobs in other shards)`; timed-out and
    not-run jobs are counted when there are any."""
    counts = report.counts()
    shown = [s for s in counts if counts[s] or s in (OK, CACHED, FAILED)]
    text = ", ".join(f"{counts[s]} {s}" for s in shown) + f" in {report.seconds:.1f} s"
    extra = [f"shard {report.shard}"] if report.shard else []
    if report.skipped:
        extra.append(f"{report.skipped} job{'s' * (report.skipped != 1)} in other shards")
    if report.interrupted:
        extra.append("interrupted")
    return text + (f" ({', '.join(extra)})" if extra else "")
