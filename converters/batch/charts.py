"""The charts of a batch run, read at a glance above report.html's tables and in report.md:
artifact size per target against its source, max |diff| against each target's tolerance (log
scale), job time (a cached job's: the time it took when it was made) and GPU delegate coverage.

`charts(report)` -> the Charts with something to show; `svg(chart)` draws one as static inline
SVG (pygal, imported only here: no script, no link, the same bytes for the same report);
`mermaid(chart)` writes it as a Mermaid xychart for GitHub's markdown (report.md)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from graphfreeze.batch.baseline import size
from graphfreeze.batch.results import NOT_RUN, Report, duration, rows

GREY, BLUE, RED, GREEN, ORANGE = "#afb8c1", "#0969da", "#cf222e", "#2da44e", "#bc4c00"
INK = "#24292f"  # text, and report.md's lines
FONT = 'system-ui,-apple-system,"Segoe UI",sans-serif'


@dataclass(frozen=True)
class Chart:
    """One chart: a bar per label and series (None: no bar)."""

    key: str  # its id in report.html
    title: str
    short: str  # its name in a list of charts
    labels: tuple[str, ...]
    series: tuple[tuple[str, str, tuple[float | None, ...]], ...]  # (name, colour, values)
    unit: str  # "bytes", "seconds", "diff" or "percent"
    stacked: bool = False
    log: bool = False
    note: str = ""
    colours: tuple[tuple[str | None, ...], ...] = ()  # a bar's own colour, per series
    floor: float | None = None  # where a log chart draws a 0 (printed as 0)


def charts(report: Report) -> list[Chart]:
    """The charts this run has data for, in reading order."""
    made = [c(report) for c in (_sizes, _diffs, _times, _gpu)]
    return [c for c in made if c is not None and c.labels]


def _sizes(report: Report) -> Chart:
    labels, source, artifact = [], [], []
    for job in report.jobs:
        for target, record, _ in rows(job):
            if record is not None:
                labels.append(f"{job.name}/{target}")
                source.append(job.source_bytes)
                artifact.append(float(record.bytes))
    known = [v for v in (*source, *artifact) if v]
    log = bool(known) and max(known) / min(known) > 100
    return Chart("chart-size", "Artifact size against its source" + (" (log scale)" * log),
                 "size", tuple(labels), (("source", GREY, tuple(source)),
                                 ("artifact", BLUE, tuple(artifact))), "bytes", log=log)


def _diffs(report: Report) -> Chart:
    """Each verified artifact's worst output against that output's tolerance; a failed
    verification's, as its error says."""
    labels, diffs, tolerances, over = [], [], [], []
    for job in report.jobs:
        for target, record, failed in rows(job):
            found = verified(record.sidecar) if record is not None else \
                failed_verification(job.error) if failed else None
            if found is None:
                continue
            diff, tolerance = found
            labels.append(f"{job.name}/{target}")
            diffs.append(diff)
            tolerances.append(tolerance if tolerance is not None and math.isfinite(tolerance)
                              else None)
            over.append(RED if tolerance is not None and diff > tolerance else None)
    floor = min([v for v in (*diffs, *tolerances) if v] or [1e-12]) / 10
    zero = [d for d in diffs if d == 0]
    note = f"a max |diff| of 0 is drawn at {floor:.0e}, the axis floor" if zero else ""
    return Chart("chart-diff", "max |diff| against the tolerance (log scale)", "max |diff|",
                 tuple(labels),
                 (("max |diff|", BLUE, tuple(d or floor for d in diffs)),
                  ("tolerance", GREY, tuple(tolerances))), "diff", log=True, note=note,
                 colours=(tuple(over), ()), floor=floor if zero else None)


def verified(sidecar: dict) -> tuple[float, float | None] | None:
    """(max |diff|, its output's tolerance) of the output furthest from the original, or None
    when the artifact was not verified."""
    from graphfreeze.stages.verify.options import per_output

    verification = (sidecar or {}).get("verification") or {}
    metrics = {k: m["max_abs_diff"] for k, m in (verification.get("metrics") or {}).items()
               if "max_abs_diff" in m}
    if not metrics:
        return None
    output = max(metrics, key=metrics.get)
    spec = verification.get("tolerance")
    if spec is None:
        return metrics[output], None
    default, own = per_output(spec, "tolerance")
    return metrics[output], own.get(output, own.get(output.rsplit(":", 1)[0], default))


def failed_verification(error: str | None) -> tuple[float, float | None] | None:
    """(max |diff|, tolerance) as a failed verification's error says them."""
    said = re.search(r"differs by up to ([-+.\deE]+)(?: \(tolerance ([-+.\deEinf]+))?",
                     error or "")
    if not said:
        return None
    return float(said.group(1)), float(said.group(2)) if said.group(2) else None


def _times(report: Report) -> Chart:
    jobs = [j for j in report.jobs if j.status != NOT_RUN]
    cached = [j.made_seconds is not None for j in jobs]
    return Chart("chart-time", "Job time (a cached job: when it was made)", "job time",
                 tuple(j.name + " (cached)" * c for j, c in zip(jobs, cached, strict=True)),
                 (("this run", BLUE, tuple(None if c else j.seconds
                                          for j, c in zip(jobs, cached, strict=True))),
                  ("cached: time when made", GREY,
                   tuple(j.made_seconds if c else None for j, c in zip(jobs, cached, strict=True)))),
                 "seconds", stacked=True)


def _gpu(report: Report) -> Chart:
    labels, taken, left = [], [], []
    for job in report.jobs:
        for record in job.artifacts:
            gpu = (record.sidecar or {}).get("gpu")
            if isinstance(gpu, dict) and gpu.get("ops"):
                labels.append(f"{job.name}/{record.target}")
                taken.append(100 * gpu["gpu_ops"] / gpu["ops"])
                left.append(100 - taken[-1])
    return Chart("chart-gpu", "GPU delegate coverage (share of ops)", "GPU coverage",
                 tuple(labels),
                 (("GPU", GREEN, tuple(taken)), ("falls back to the CPU", ORANGE, tuple(left))),
                 "percent", stacked=True)


def fmt(chart: Chart, value: float | None) -> str:
    """A value as the chart's unit reads."""
    if value is None:
        return ""
    return {"bytes": lambda v: size(int(v)), "seconds": duration, "diff": _diff,
            "percent": lambda v: f"{v:.0f}%"}[chart.unit](value)


def _diff(value: float) -> str:
    """`3.7e-08`, `0.02`, `1e-04` (not `0.0001`)."""
    text = f"{value:.2g}"
    return text if "e" in text or value >= 0.01 or value == 0 else f"{value:.0e}"


# -- report.html: static SVG ---------------------------------------------------------------------

def svg(chart: Chart) -> str:
    """The chart as inline SVG for an HTML page: horizontal bars, a row per label, values printed
    on the bars and in each bar's tooltip (<title>), no script."""
    import pygal
    from pygal.style import Style

    kept = [(n, s) for n, s in enumerate(chart.series) if any(v is not None for v in s[2])]
    style = Style(font_family=FONT, background="transparent", plot_background="transparent",
                  foreground=INK, foreground_strong=INK, foreground_subtle="#57606a",
                  colors=tuple(colour for _, (_, colour, _) in kept), opacity=".9",
                  opacity_hover="1", guide_stroke_color="#d0d7de",
                  major_guide_stroke_color="#d0d7de", label_font_size=12,
                  major_label_font_size=12, legend_font_size=12, value_font_size=11,
                  title_font_size=14, transition="0s")
    bars = len(chart.labels) * (1 if chart.stacked else len(kept))
    axis = _range(chart)
    kind = pygal.HorizontalStackedBar if chart.stacked else pygal.HorizontalBar
    plot = kind(style=style, js=[], disable_xml_declaration=True, width=640,
                height=110 + 16 * bars + 10 * len(chart.labels), logarithmic=chart.log,
                print_values=True, print_values_position="top", legend_at_bottom=True,
                legend_at_bottom_columns=len(kept), truncate_label=40,
                value_formatter=lambda v: fmt(chart, v), formatter=lambda v: fmt(chart, v or None),
                show_y_guides=False, spacing=8, margin=8, range=axis,
                y_labels=_ticks(chart, axis), title=chart.title, classes=["gf-chart"])
    plot.uuid = chart.key  # the chart's id, and its CSS's scope: the same bytes every time
    plot.x_labels = list(reversed(chart.labels))  # pygal draws the first label at the bottom
    for n, (name, _, values) in kept:
        own = chart.colours[n] if n < len(chart.colours) and chart.colours[n] else ()
        points = [{"value": v, "color": c} if c and v is not None else v
                  for v, c in zip(values, own or [None] * len(values), strict=True)]
        if n == 0 and chart.floor is not None:  # a max |diff| of 0, drawn at the floor
            points = [{"value": v, "formatter": lambda _: "0"} if v == chart.floor else v
                      for v in points]
        quiet = {"formatter": lambda _: ""} if n and chart.unit == "percent" else {}
        plot.add(name, list(reversed(points)), **quiet)  # (GPU share: the GPU's printed)
    plot.add_xml_filter(_static)
    return plot.render(is_unicode=True)


def _range(chart: Chart) -> tuple[float, float] | None:
    """The value axis: room past the longest bar for its printed value."""
    if chart.unit == "percent":
        return (0, 100)
    totals = [sum(v or 0 for v in vs) for vs in zip(*(s[2] for s in chart.series), strict=True)] \
        if chart.stacked else [v for s in chart.series for v in s[2] if v is not None]
    if not totals or not max(totals):
        return None
    if chart.log:
        low = min(v for v in totals if v > 0)
        return (10 ** math.floor(math.log10(low)), max(totals) * 10 ** 0.5)
    return (0, max(totals) * 1.2)


def _ticks(chart: Chart, axis: tuple[float, float] | None) -> list[float] | None:
    """The value axis' labels: powers of ten for max |diff|; round sizes (1, 2 or 5 times a power
    of ten KB, MB...) on a linear scale; pygal's own otherwise."""
    if axis is None or chart.unit not in ("bytes", "diff") or chart.log and chart.unit != "diff":
        return None
    if chart.log:
        return [10.0 ** k for k in range(round(math.log10(axis[0])),
                                         math.floor(math.log10(axis[1]) - 0.05) + 1)]
    unit = 1024.0 ** min(3, int(math.log(max(axis[1], 1), 1024)))
    rough = axis[1] / unit / 5
    step = next(m * 10.0 ** math.floor(math.log10(rough)) for m in (1, 2, 5, 10)
                if m * 10.0 ** math.floor(math.log10(rough)) >= rough)
    return [k * step * unit for k in range(int(axis[1] / unit / step) + 1)]


def _static(root):
    """pygal's SVG made static and stable: no script, comment, namespace URL or date; each bar's
    value in a <title> (a tooltip without JavaScript)."""
    import xml.etree.ElementTree as ET

    root.attrib.pop("xmlns", None)  # the HTML parser puts inline <svg> in its namespace
    for parent in root.iter():
        for child in list(parent):
            if child.tag == "script" or child.tag is ET.Comment:
                parent.remove(child)
    for bars in [g for g in root.iter("g") if g.get("class") == "bars"]:
        for bar in [g for g in bars if g.get("class") == "bar"]:
            said = {d.get("class"): d.text for d in bar.iter("desc")}
            if not said.get("value"):  # a stacked chart's missing part: no bar
                bars.remove(bar)
                continue
            title = ET.SubElement(bar, "title")
            title.text = f"{said.get('x_label', '')}: {said['value']}"
    return root


# -- report.md: Mermaid --------------------------------------------------------------------------

MERMAID = {  # unit -> (title with its line, title without, unit on the axis)
    "bytes": ("Artifact size (bars) against its source (line)", "Artifact size", "B"),
    "diff": ("max |diff| (bars) against the tolerance (line)", "max |diff|", "log10"),
    "seconds": ("", "Job time (a cached job: when it was made)", "s"),
    "percent": ("", "Share of ops the GPU delegate takes", "%")}


def mermaid(chart: Chart) -> list[str]:
    """The chart as a ```mermaid xychart for GitHub: artifact size, max |diff|, job time or GPU
    share as bars, and the source size or tolerance as a line over them (xychart has no legend:
    the title says which is which). A log chart is drawn in log10."""
    first, second = chart.series
    if chart.stacked:  # one bar per label: whichever series has its value
        bars = tuple(a if a is not None else b for a, b in zip(first[2], second[2], strict=True))
        line = None
    else:
        bars, line = (first[2], second[2]) if chart.unit == "diff" else (second[2], first[2])
    with_line, alone, unit = MERMAID[chart.unit]
    scale = 1
    if chart.unit == "bytes":  # in the unit of the largest
        largest = max([v for v in (*first[2], *second[2]) if v] or [1])
        power = min(3, int(math.log(largest, 1024))) if largest >= 1 else 0
        unit, scale = ("B", "KB", "MB", "GB")[power], 1024.0 ** -power

    def plotted(values) -> list[float | None]:
        return [None if v is None else round(math.log10(v), 2) if chart.log else
                round(v * scale, 3) for v in values]

    shown, over = plotted(bars), plotted(line or ())
    if not any(v is not None for v in over):
        over = []
    known = [v for v in (*shown, *over) if v is not None]
    low = min(0, math.floor(min(known))) if known else 0
    high = 100 if chart.unit == "percent" else \
        max(math.ceil(max(known)), low + 1) if known else 1
    title = (with_line if over else alone).replace('"', "'")
    labels = ", ".join('"' + label.replace('"', "'") + '"' for label in chart.labels)
    colour = (first if chart.unit in ("diff", "percent") or chart.stacked else second)[1]
    out = ["```mermaid", "---", "config:", "  themeVariables:", "    xyChart:",
           f'      plotColorPalette: "{colour}, {INK}"', "---",
           "xychart-beta horizontal", f'  title "{title}"', f"  x-axis [{labels}]",
           f'  y-axis "{unit}" {low:g} --> {high:g}',
           "  bar [" + ", ".join(f"{low if v is None else v:g}" for v in shown) + "]"]
    if over:  # a missing value (no source size, no finite tolerance): at the axis' end
        out.append("  line [" + ", ".join(f"{(high if chart.log else low) if v is None else v:g}"
                                          for v in over) + "]")
    return [*out, "```"]
