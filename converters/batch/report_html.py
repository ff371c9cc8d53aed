"""report.html: one self-contained page (inline CSS, no scripts, no network) a CI user can act
on: the run's header, broken budgets first, the changes against the baseline, then a row per job
and target (failures first) with its artifact (relative link, sha256), metrics, its change
against the baseline, its Model Explorer overlays (--explain), and a failed job's one-line error
(once per job) and divergence table."""

from __future__ import annotations

import html
import os
import posixpath

from graphfreeze.batch.baseline import fmt_change, size, worse
from graphfreeze.batch.charts import failed_verification
from graphfreeze.batch.generation import generation
from graphfreeze.batch.results import (
    NOT_RUN,
    OK,
    OVER_BUDGET,
    UNSUCCESSFUL,
    JobResult,
    Report,
    gpu_lines,
    job_memory,
    job_time,
    one_line,
    rows,
    summary_line,
    title,
)
from graphfreeze.io import storage

e = html.escape

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#222}
h1{font-size:1.3em;margin:0 0 .3em}h2{font-size:1.1em;margin:1.4em 0 .4em}
p.sum{margin:0 0 1em;color:#444}dl.meta{display:grid;grid-template-columns:max-content auto;
gap:.1em 1em;margin:0 0 1em;color:#444}dl.meta dt{font-weight:600}dl.meta dd{margin:0}
table{border-collapse:collapse;width:100%}
th,td{padding:.35em .7em;border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}
th{background:#f5f5f5;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.st{font-weight:600;text-transform:uppercase;font-size:.85em;white-space:nowrap}
.ok .st{color:#1a7f37}.cached .st{color:#57606a}.failed .st,.timed-out .st{color:#cf222e}
.over-budget .st{color:#bc4c00}.not-run .st{color:#57606a}
tr.failed,tr.timed-out{background:#fff5f5}tr.over-budget{background:#fff8f0}
tr.err td{border-top:0;color:#cf222e;font-family:monospace;padding-top:0;white-space:pre-wrap;
word-break:break-word}tr.not-run.err td{color:#57606a}td.src{color:#57606a;word-break:break-all}
.bad{color:#cf222e}.good{color:#1a7f37}.same{color:#57606a}code,.sha{font-family:monospace}
.sha{color:#57606a;font-size:.85em}table.div{width:auto;margin:.3em 0}table.div td,
table.div th{font-size:.9em;padding:.15em .6em}p.note{color:#57606a;font-size:.9em}
div.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:1em 2em}
figure{margin:0}figure svg{width:100%;height:auto;display:block}
figcaption{color:#57606a;font-size:.85em}
"""
_HEAD = ("status", "model", "target", "artifact", "source", "size", "nodes", "max |diff|",
         "top-1", "vs baseline", "job time")


def report_html(report: Report, folder: str = "") -> bytes:
    """The page; artifact links are relative to `folder` (where the page is written)."""
    parts = [_header(report), _budgets(report), _charts(report), _baseline(report),
             _jobs(report, folder), _generation(report), _gpu(report)]
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<link rel="icon" href="data:,">
<title>{e(title(report))}</title><style>{_CSS}</style></head>
<body>{"".join(parts)}</body></html>
"""
    return page.encode()


def _charts(report: Report) -> str:
    """The run at a glance (charts.py), above the tables."""
    from graphfreeze.batch import charts

    figures = [f'<figure id="{e(c.key)}">{charts.svg(c)}' +
               (f"<figcaption>{e(c.note)}</figcaption>" if c.note else "") + "</figure>"
               for c in charts.charts(report)]
    if not figures:
        return ""
    return f'<h2 id="charts">At a glance</h2>\n<div class="charts">{"".join(figures)}</div>\n'


def _gpu(report: Report) -> str:
    """Each TFLite artifact's GPU delegate coverage (ops taken, ops left to the CPU and why)."""
    found = gpu_lines(report)
    if not found:
        return ""
    body = "\n".join(f"<tr><td>{e(n)}</td><td>{e(t)}</td><td>{e(line)}</td></tr>"
                     for n, t, line in found)
    return ('<h2 id="gpu">GPU delegate coverage</h2>\n<table><thead><tr><th>model</th>'
            f"<th>target</th><th>gpu</th></tr></thead>\n<tbody>\n{body}\n</tbody></table>\n")


def _header(report: Report) -> str:
    run = report.run
    facts = [("started", run.get("started")), ("manifest", run.get("manifest")),
             ("graphfreeze", run.get("graphfreeze")), ("TensorFlow", run.get("tensorflow")),
             ("shard", report.shard or ("all" if run and "title" not in run else None)),
             ("baseline", report.baseline["path"] if report.baseline else None),
             ("budgets", run.get("budgets"))]
    items = "".join(f"<dt>{e(k)}</dt><dd>{e(str(v))}</dd>" for k, v in facts if v)
    return (f"<h1>{e(title(report))}</h1>\n" + (f'<dl class="meta">{items}</dl>\n' if items else "") +
            f'<p class="sum">{e(summary_line(report))}</p>\n')


def _budgets(report: Report) -> str:
    broken = [(job, b) for job in report.over_budget for b in job.budget]
    if not broken:
        return ""
    trs = "".join(f'<tr class="over-budget"><td class="st">over-budget</td><td>{e(job.name)}</td>'
                  f"<td>{e(b['target'])}</td><td><code>{e(b['rule'])}</code></td>"
                  f"<td>{e(b['reason'])}</td></tr>" for job, b in broken)
    return ('<h2 id="budgets">Over budget</h2>\n<table><thead><tr><th>status</th><th>model</th>'
            "<th>target</th><th>rule</th><th>why</th></tr></thead><tbody>"
            f"{trs}</tbody></table>\n")


def _delta(metric: str, entry: dict) -> str:
    cls = "same" if not entry["change"] else "bad" if worse(metric, entry) else "good"
    return f'<span class="{cls}">{e(metric)} {e(fmt_change(metric, entry))}</span>'


def _baseline(report: Report) -> str:
    base = report.baseline
    if base is None:
        return ""
    out = [f'<h2 id="baseline">Against the baseline <code>{e(base["path"])}</code></h2>',
           f'<p class="sum">{base["significant"]} of {base["compared"]} compared artifacts '
           f'changed beyond noise; {len(base["new"])} new, {len(base["removed"])} removed. '
           "&#9650; up, &#9660; down; red worse, green better.</p>"]
    out += [f'<p class="note">note: {e(n)}</p>' for n in base["notes"]]
    shown = [c for c in base["changes"] if c["significant"]]
    if shown:
        trs = []
        for c in shown:
            cells = ", ".join(_delta(m, x) for m, x in c["metrics"].items() if x["significant"])
            ops = ", ".join(f"{op} {n:+d}" for op, n in (c.get("op_types") or {}).items())
            trs.append(f"<tr><td>{e(c['name'])}</td><td>{e(c['target'])}</td><td>{cells}</td>"
                       f"<td>{e(ops)}</td></tr>")
        out.append("<table><thead><tr><th>model</th><th>target</th><th>change</th>"
                   f"<th>op types</th></tr></thead><tbody>{''.join(trs)}</tbody></table>")
    lists = [("status changed", [f"{s['name']}: {s['before']} -> {s['after']}"
                                 for s in base["status_changes"]]),
             ("new", base["new"]), ("removed", base["removed"])]
    out += [f"<p>{e(what)}: {e(', '.join(items))}</p>" for what, items in lists if items]
    return "\n".join(out) + "\n"


def href(path: str, folder: str) -> str:
    """`path` relative to `folder` (the page's), for a link that survives moving the folder."""
    if storage.is_remote(path) or storage.is_remote(folder):
        if storage.is_remote(path) and storage.is_remote(folder):
            return posixpath.relpath(path.split("://", 1)[1], folder.split("://", 1)[1])
        return path
    return os.path.relpath(path, folder or ".").replace(os.sep, "/")


def _failed_diff(job: JobResult) -> str:
    """A failed verification's max |diff|: the output's, as its error says, else the worst the
    divergence locator found (details.divergence)."""
    said = failed_verification(job.error)
    if said:
        return f"{said[0]:.3g}"
    div = (job.details or {}).get("divergence") or {}
    diffs = [r["max_abs_diff"] for r in div.get("first") or [] if "max_abs_diff" in r]
    return f"{max(diffs):.3g}" if diffs else ""


def _verification(sidecar: dict) -> tuple[str, str]:
    """(max |diff|, top-1) over all outputs, "" when not verified; top-1 is the accuracy on
    labelled data when there is one, else the agreement with the original."""
    verification = sidecar.get("verification") or {}
    metrics = verification.get("metrics") or {}
    diffs = [m["max_abs_diff"] for m in metrics.values() if "max_abs_diff" in m]
    top1 = [m["top1_agreement"] for m in metrics.values() if "top1_agreement" in m]
    accuracy = verification.get("accuracy")
    shown = f"{accuracy['artifact']:.1%} (acc.)" if accuracy else \
        f"{verification['token_agreement']:.1%} (tokens)" if "token_agreement" in verification \
        else f"{min(top1):.1%}" if top1 else ""
    return (f"{max(diffs):.2g}" if diffs else "", shown)


def _generation(report: Report) -> str:
    """The language models' judgement: greedy generation against the original's."""
    found = generation(report)
    if not found:
        return ""
    heads = ["model", "target", *found[0][2]]
    body = "\n".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in (n, t, *cells.values()))
                     + "</tr>" for n, t, cells in found)
    return ('<h2 id="generation">Language models: greedy generation against the original'
            "</h2>\n<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) +
            f"</tr></thead>\n<tbody>\n{body}\n</tbody></table>\n")


def _reduced(reduced, folder: str) -> str:
    """`freeze batch --reduce`: a link to the failure's reduced repro (its stock-converter
    script, the .pb beside it)."""
    if not isinstance(reduced, dict) or "files" not in reduced:
        return ""
    files, (before, after) = reduced["files"], reduced["nodes"]
    link = href(storage.join(reduced["folder"], files["script"]), folder)
    pb = href(storage.join(reduced["folder"], files["pb"]), folder)
    return (f'<p>reduced repro ({e(reduced["target"])}, {before} &rarr; {after} nodes): '
            f'<a href="{e(link)}">{e(files["script"])}</a> on <a href="{e(pb)}">'
            f'{e(files["pb"])}</a></p>')


def _divergence(div: dict) -> str:
    if not div.get("available"):
        return f"<p>divergence: not located ({e(str(div.get('why', 'no probe')))})</p>"
    trs = "".join(f"<tr><td>{e(r['node'])}</td><td>{e(r['op'])}</td>"
                  f'<td class="n">{r["max_abs_diff"]:.3g}</td>'
                  f'<td class="n">{r["mean_abs_diff"]:.3g}</td>'
                  f"<td>{e(', '.join(r.get('agreeing_inputs', [])[:3]) or '-')}</td></tr>"
                  for r in div.get("first") or [])
    head = (f"where it diverges ({div.get('compared')} tensors compared in graph order, "
            f"tolerance {div.get('tolerance')}; {div.get('diverged', 0)} diverged)")
    if not trs:
        return f"<p>{e(head)}: every compared tensor agrees</p>"
    return (f'<p>{e(head)}:</p><table class="div"><thead><tr><th>node</th><th>op</th>'
            "<th>max |diff|</th><th>mean |diff|</th><th>upstream that agrees</th></tr></thead>"
            f"<tbody>{trs}</tbody></table>")


def _overlays(artifact, folder: str) -> str:
    """Links to the Model Explorer overlays `--explain` wrote beside the artifact (the
    sidecar's `explain`), titled with the command that opens them."""
    names = (artifact.sidecar or {}).get("explain") or {}
    parent = storage.dirname(artifact.path.rstrip("/"))
    opens = f"freeze explain {storage.basename(artifact.path.rstrip('/'))}"
    links = [f'<a class="overlay" href="{e(href(storage.join(parent, n), folder))}" '
             f'title="{e(opens)}">{e(kind)}</a>' for kind, n in sorted(names.items())]
    return f'<br><span class="sha">overlays: {", ".join(links)}</span>' if links else ""


def _rank(job: JobResult, failed: bool) -> int:
    if not failed:
        return 4
    return {OVER_BUDGET: 0, NOT_RUN: 3}.get(job.status, 1)


def _jobs(report: Report, folder: str) -> str:
    changes = {(c["name"], c["target"]): c for c in (report.baseline or {}).get("changes", [])}
    new = set((report.baseline or {}).get("new", []))
    entries = sorted(((_rank(job, failed), job.name, target, i, job, artifact, failed)
                      for i, job in enumerate(report.jobs)
                      for target, artifact, failed in rows(job)), key=lambda r: r[:4])
    last_failed = {r[3]: n for n, r in enumerate(entries) if r[6]}
    timed, body = set(), []
    heads = [h for h in _HEAD if h != "vs baseline" or report.baseline is not None]
    for n, (_, _, target, i, job, artifact, failed) in enumerate(entries):
        status = job.status if failed else OK if job.status in (*UNSUCCESSFUL, OVER_BUDGET) \
            else job.status
        sidecar = artifact.sidecar if artifact else {}
        diff, top1 = _verification(sidecar)
        if failed and not diff:
            diff = _failed_diff(job)
        link = ""
        if artifact:
            name = storage.basename(artifact.path.rstrip("/"))
            link = (f'<a href="{e(href(artifact.path, folder))}">{e(name)}</a><br>'
                    f'<span class="sha" title="sha256 {e(artifact.sha256)}">sha256 '
                    f"{e(artifact.sha256[:12])}</span>{_overlays(artifact, folder)}")
        change = changes.get((job.name, target))
        delta = "<br>".join(_delta(m, x) for m, x in change["metrics"].items()
                            if x["significant"]) if change else ""
        if change and not delta:
            delta = '<span class="same">within noise</span>'
        elif not change and {job.name, f"{job.name}/{target}"} & new:
            delta = "new"
        seconds = "" if i in timed else "-" if job.status == NOT_RUN else job_time(job)
        timed.add(i)
        cells = [f'<td class="st">{e(status)}</td>', f"<td>{e(job.name)}</td>",
                 f"<td>{e(target)}</td>", f"<td>{link}</td>", f'<td class="src">{e(job.source)}</td>',
                 f'<td class="n">{e(size(artifact.bytes) if artifact else "")}</td>',
                 f'<td class="n">{e(str(sidecar.get("node_count", "")))}</td>',
                 f'<td class="n">{e(diff)}</td>', f'<td class="n">{e(top1)}</td>',
                 *([f"<td>{delta}</td>"] if report.baseline is not None else []),
                 f'<td class="n">{e(f"{seconds} {job_memory(job)}".strip() if seconds else "")}</td>']
        body.append(f'<tr class="{e(status)}">{"".join(cells)}</tr>')
        if failed and last_failed.get(i) == n:  # a job's error once, under its last failed row
            text = e(one_line(job.error))
            div = (job.details or {}).get("divergence")
            extra = _divergence(div) if isinstance(div, dict) else ""
            extra += _reduced((job.details or {}).get("reduced"), folder)
            body.append(f'<tr class="{e(job.status)} err"><td></td>'
                        f'<td colspan="{len(heads) - 1}">{text}{extra}</td></tr>')
    head = "".join(f"<th>{e(h)}</th>" for h in heads)
    return (f'<h2 id="jobs">Jobs</h2>\n<table><thead><tr>{head}</tr></thead>\n<tbody>\n'
            + "\n".join(body) + "\n</tbody></table>\n"
            '<p class="note">job time: the whole job (loading the model once, every target), '
            "shown on the job's first row, with its worker's peak RSS (est.: from the model's size)."
            "</p>\n")


__all__ = ["report_html", "href"]
