"""report.md: GitHub-flavoured markdown for a PR comment or $GITHUB_STEP_SUMMARY. Compact, what
needs acting on first: broken budgets, failed jobs, changes against the baseline beyond noise,
new and removed models; every job in a folded table; the run's facts in one line at the end."""

from __future__ import annotations

from graphfreeze.batch import results
from graphfreeze.batch.baseline import METRICS, fmt_change, worse
from graphfreeze.batch.results import (
    NOT_RUN,
    UNSUCCESSFUL,
    Report,
    gpu_lines,
    job_memory,
    job_time,
    one_line,
    summary_line,
)

NAMES = {"size": "size", "ops": "nodes", "top1": "top-1", "latency": "latency",
         "max_diff": "max \\|diff\\|", "mean_diff": "mean \\|diff\\|"}
LIMIT = 30  # rows of changes shown; the rest are counted


def cell(text) -> str:
    """Text for a table cell or list item: one line, `|` escaped, `<` escaped outside code
    spans (inside them GitHub shows it as written)."""
    parts = str(text).replace("\n", " ").replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def report_md(report: Report) -> bytes:
    base = report.baseline
    failed = [j for j in report.failed if j.status != NOT_RUN]
    not_run = len(report.failed) - len(failed)
    head = [f"{len(report.over_budget)} over budget" if report.over_budget else "",
            f"{len(failed)} failed" if failed else "", f"{not_run} not run" if not_run else "",
            f"{base['significant']} changed" if base and base["significant"] else ""]
    title = ", ".join(h for h in head if h) or "all ok" + (", nothing changed beyond noise"
                                                          if base else "")
    out = [f"### {results.title(report)}: {title}", "", summary_line(report), ""]
    if report.over_budget:
        out += ["**Over budget** (exit 8):", ""]
        out += [f"- :warning: `{cell(job.name)}` {cell(b['reason'])}"
                for job in report.over_budget for b in job.budget]
        out.append("")
    if failed:
        out += ["**Failed:**", ""]
        out += [f"- :x: `{cell(job.name)}` ({job.status}) {cell(one_line(job.error))}" +
                _reduced(job) for job in failed]
        out.append("")
    if base is not None:
        out += _baseline(base)
    out += _charts(report)
    out += _all_jobs(report)
    out += _generation(report)
    gpu = gpu_lines(report)
    if gpu:
        out += ["<details><summary>GPU delegate coverage</summary>", "",
                "| model | target | gpu |", "|---|---|---|"]
        out += [f"| {cell(n)} | {cell(t)} | {cell(line)} |" for n, t, line in gpu]
        out += ["", "</details>", ""]
    run = report.run
    facts = [f"graphfreeze {run['graphfreeze']}" if run.get("graphfreeze") else "",
             f"TensorFlow {run['tensorflow']}" if run.get("tensorflow") else "",
             f"`{cell(run['manifest'])}`" if run.get("manifest") else "",
             f"shard {report.shard}" if report.shard else "", run.get("started", "")]
    out += ["<sub>" + " · ".join(f for f in facts if f) + "</sub>", ""]
    return "\n".join(out).encode()


def _baseline(base: dict) -> list[str]:
    shown = [c for c in base["changes"] if c["significant"]]
    out = [f"**Against the baseline** `{cell(base['path'])}`: {base['significant']} of "
           f"{base['compared']} artifacts changed beyond noise (▲ up, ▼ down, "
           ":red_circle: worse, :green_circle: better)", ""]
    if shown:
        used = [m for m in METRICS if any(c["metrics"].get(m, {}).get("significant")
                                          for c in shown)]
        out += ["| model | target | " + " | ".join(NAMES[m] for m in used) + " | op types |",
                "|---|---|" + "---|" * len(used) + "---|"]
        for c in shown[:LIMIT]:
            cells = []
            for m in used:
                x = c["metrics"].get(m)
                if not x or not x["significant"]:
                    cells.append("")
                    continue
                dot = ":red_circle: " if worse(m, x) else ":green_circle: "
                cells.append(dot + cell(fmt_change(m, x)))
            ops = ", ".join(f"{op} {n:+d}" for op, n in (c.get("op_types") or {}).items())
            out.append(f"| {cell(c['name'])} | {cell(c['target'])} | " + " | ".join(cells) +
                       f" | {cell(ops)} |")
        if len(shown) > LIMIT:
            out.append(f"\n... and {len(shown) - LIMIT} more in report.html")
        out.append("")
    for s in base["status_changes"]:
        out.append(f"- `{cell(s['name'])}`: {s['before']} → {s['after']}")
    for what in ("new", "removed"):
        if base[what]:
            out.append(f"- {what}: " + ", ".join(f"`{cell(n)}`" for n in base[what]))
    out += [f"- note: {cell(n)}" for n in base["notes"]]
    return out + ([""] if out[-1] else [])


def _charts(report: Report) -> list[str]:
    """The run at a glance as Mermaid charts (GitHub draws them), open but foldable."""
    from graphfreeze.batch import charts

    drawn = charts.charts(report)
    if not drawn:
        return []
    out = ["<details open><summary>At a glance: " + ", ".join(c.short for c in drawn) +
           "</summary>", ""]
    for chart in drawn:
        out += [*charts.mermaid(chart), *([f"<sub>{cell(chart.note)}</sub>"] if chart.note
                                          else []), ""]
    return out + ["</details>", ""]


def _all_jobs(report: Report) -> list[str]:
    out = ["<details><summary>All jobs</summary>", "",
           "| status | model | targets | time | memory |", "|---|---|---|---|---|"]
    for job in sorted(report.jobs, key=lambda j: (j.status not in UNSUCCESSFUL, j.name)):
        out.append(f"| {job.status} | {cell(job.name)} | {cell(','.join(job.targets) or '-')} "
                   f"| {job_time(job)} | {job_memory(job)} |")
    return out + ["", "</details>", ""]


def _generation(report: Report) -> list[str]:
    """The language models' token agreement and decode tokens/s (batch/generation.py)."""
    from graphfreeze.batch.generation import generation

    found = generation(report)
    if not found:
        return []
    heads = ["model", "target", *found[0][2]]
    out = ["**Language models** (greedy generation against the original's):", "",
           "| " + " | ".join(cell(h) for h in heads) + " |", "|---" * len(heads) + "|"]
    out += ["| " + " | ".join(cell(v) for v in (n, t, *cells.values())) + " |"
            for n, t, cells in found]
    return out + [""]


def _reduced(job) -> str:
    """`freeze batch --reduce`: the reduced repro's script."""
    reduced = (job.details or {}).get("reduced") or {}
    if "files" not in reduced:
        return ""
    before, after = reduced["nodes"]
    return f" (reduced repro: `{reduced['files']['script']}`, {before} → {after} nodes)"
