"""What the CLI prints: written artifacts with their verification table, and inspect reports.
Everything printed comes from the records it is given (sidecars, reports): no per-format code."""

from __future__ import annotations

import errno
import os

from rich.console import Console as _RichConsole
from rich.markup import escape
from rich.table import Table

PIPED_WIDTH = 240  # the width printed into a pipe or a file (CI logs, `| less`) without COLUMNS


class Console(_RichConsole):
    """rich's Console, but a closed stdout pipe raises BrokenPipeError for the CLI to end quietly
    with exit 0 (rich's own reaction is SystemExit(1)); into a pipe or a file, lines are as wide
    as COLUMNS says, else as wide as they need up to PIPED_WIDTH (not cut at rich's 80), with no
    trailing spaces."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_terminal and "width" not in kwargs and not os.environ.get("COLUMNS"):
            self.width = PIPED_WIDTH

    def _render_buffer(self, buffer) -> str:
        text = super()._render_buffer(buffer)
        if self.is_terminal:
            return text
        return "\n".join(line.rstrip() for line in text.split("\n"))

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "broken pipe")


def literal(value) -> str:
    """A name, path or other text read from a model, an artifact or its sidecar, as rich prints
    it verbatim: its `[...]` not taken as markup (an ONNX name `x[/]`, `[link=...]`)."""
    return escape(str(value))


def size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def shape(dims) -> str:
    return "?" if dims is None else "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def written(results, report: str | None = None) -> None:
    """What a run wrote (`report`: where --report went), its verification and warnings."""
    out = Console(highlight=False, soft_wrap=True)
    first = results[0].sidecar
    for role, tensors in (("input", first.inputs), ("output", first.outputs)):
        for t in tensors:
            out.print(literal(f"{role:<7} {t['name']:<24} {t['dtype']:<8} {shape(t['shape'])}"))
    for w in results:
        car = w.sidecar
        nodes = f", {car.facts['node_count']} nodes" if "node_count" in car.facts else ""
        out.print(f"[bold]{literal(w.target)}[/]: wrote {literal(w.path)} "
                  f"({size(car.bytes)}{nodes})")
        for line in car.summary:
            out.print(literal(f"  {line}"))
        if car.facts.get("gpu"):
            out.print(f"  gpu: {car.facts['gpu']['line']}", markup=False)
        if car.facts.get("latency"):
            out.print(f"  latency: {latency_line(car.facts['latency'])}", markup=False)
        out.print(literal(f"  sidecar: {w.sidecar_path}"))
    if report:
        out.print(literal(f"report: {report}"))
    timed = any(w.sidecar.facts.get("latency") for w in results)  # a latency column
    Console(highlight=False, width=max(out.width, 132 if timed else 120)).print(
        verification_table(results))
    for line in accuracy_lines(results):
        out.print(line, markup=False)
    for line in legend(results):
        out.print(line, markup=False, style="dim")
    from graphfreeze.stages.verify.diverge import lines

    for w in results:
        divergence = (w.sidecar.verification or {}).get("divergence")
        if divergence:
            out.print(f"[bold]{literal(w.target)}[/]: " + literal("\n".join(lines(divergence))))
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for warning in sorted({x for w in results for x in w.sidecar.warnings}):
        err.print(f"[bold yellow]warning:[/] {literal(warning)}")


def legend(results) -> list[str]:
    """What the terms printed above mean (terms.py), for those that were printed."""
    from graphfreeze_cli import terms

    facts = [w.sidecar.facts for w in results]
    return [terms.line(term) for term, used in (
        (terms.GPU, any(f.get("gpu") for f in facts)),
        (terms.RMSE_SCALE, any(f.get("quantization_layers") for f in facts))) if used]


def accuracy_lines(results) -> list[str]:
    """Top-1 accuracy on labelled data: the original's once, then each artifact's and its drop."""
    found = [(w.target, w.sidecar.verification["accuracy"]) for w in results
             if (w.sidecar.verification or {}).get("accuracy")]
    if not found:
        return []
    first = found[0][1]
    return [f"top-1 accuracy on {first['rows']} labelled rows: original {first['original']:.2%}",
            *(f"  {target}: {a['artifact']:.2%} (drop {a['drop']:+.2%})" for target, a in found)]


def ms(value: float) -> str:
    return f"{value:.3g} ms"


def latency_line(lat: dict) -> str:
    """--benchmark's record: `median 0.48 ms, p90 0.54 ms (RUNTIME, 1 thread, 50 runs; CPU)`."""
    threads = f"{lat['threads']} thread" + ("s" if lat["threads"] != 1 else "")
    return (f"median {ms(lat['median_ms'])}, p90 {ms(lat['p90_ms'])} at batch 1 "
            f"({lat['runtime']}, {threads}, {lat['runs']} runs after {lat['warmup']} warm-up; "
            f"{lat['cpu']})")


def verification_table(results) -> Table:
    where = next((w.sidecar.verification.get("data", "seeded inputs") for w in results
                  if w.sidecar.verification), "seeded inputs")
    against = "golden outputs" if where.startswith("the golden") else "the original"
    table = Table(title=literal(f"compared with {against} on {where}"), title_justify="left")
    numbers = ("size", "max |diff|", "mean |diff|", "rmse", "cosine", "top-1", "latency")
    timed = any(w.sidecar.facts.get("latency") for w in results)  # --benchmark
    for col in ("target", "file", "size", "output", *numbers[1:6], "ok",
                *(("latency",) if timed else ())):
        table.add_column(col, no_wrap=col != "file", overflow="fold",
                         justify="right" if col in numbers else "left")
    for w in results:
        car = w.sidecar
        check = car.verification
        name = literal(car.file)
        lat = car.facts.get("latency")
        latency = (ms(lat["median_ms"]) if lat else "-",) if timed else ()
        if not check:
            table.add_row(literal(w.target), name, size(car.bytes), "-", "not verified", "", "",
                          "", "",
                          "", *latency)
            continue
        for output, m in check["metrics"].items():
            top1 = m.get("top1_agreement")
            table.add_row(literal(w.target), name, size(car.bytes), literal(output),
                          f"{m['max_abs_diff']:.2g}",
                          f"{m['mean_abs_diff']:.2g}", f"{m['rmse']:.2g}", f"{m['cosine']:.6f}",
                          "" if top1 is None else f"{top1:.0%}", "yes" if check["passed"] else "no",
                          *latency)
            name = ""  # the file once per target
            latency = ("",) if timed else ()  # once per target
    return table


def report(data: dict) -> None:
    from graphfreeze_cli import terms

    out = Console(highlight=False, soft_wrap=True, width=max(Console().width, 120))
    written = data["kind"] == "artifact"  # an artifact file (Format.describe), not a model
    kind = f"{data['format'].replace('_', ' ')} artifact" if written else \
        data["kind"].replace("_", " ")
    out.print(f"[bold]{literal(data['path'])}[/]: {literal(kind)}, "
              f"{size(data.get('size_bytes', 0))}")
    if data.get("tag_sets"):
        out.print("tag sets: " + "; ".join(",".join(t) for t in data["tag_sets"]), markup=False)
    for sig in data.get("signatures", []):
        ins, outs = (", ".join(t["key"] if t["key"] == t["name"] else f"{t['key']}={t['name']}"
                               for t in sig[role]) for role in ("inputs", "outputs"))
        out.print(f"signature {sig['key']}: {ins} -> {outs}", markup=False)
    table = Table(title="inputs and outputs" if written else "likely inputs and outputs",
                  title_justify="left")
    for col in ("role", "name", "dtype", "shape"):
        table.add_column(col)
    for role in ("inputs", "outputs"):
        for t in data.get(role, []):
            label = t["name"] + (f" (key {t['key']})" if t.get("key") else "")
            dtype = (t["dtype"] or "?") + (f" (scale {t['scale']:.3g}, zero point "
                                           f"{t['zero_point']})" if "scale" in t else "")
            table.add_row(role[:-1], literal(label), literal(dtype), shape(t["shape"]))
    out.print(table)
    if written:
        return artifact(out, data)
    if data.get("other_outputs"):
        out.print("other candidate outputs: " + ", ".join(data["other_outputs"]), markup=False)
    if data.get("flags"):
        out.print("flags folded at inference: " +
                  ", ".join(f"{k}={v}" for k, v in data["flags"].items()), markup=False)
    variables = data.get("variables", [])
    total = sum(v["bytes"] for v in variables)
    table = Table(title=f"variables: {len(variables)}, {size(total)}", title_justify="left")
    for col in ("name", "shape", "dtype", "bytes"):
        table.add_column(col, justify="right" if col == "bytes" else "left")
    for v in variables[:20]:
        table.add_row(literal(v["name"]), shape(v["shape"]), literal(v["dtype"]),
                      size(v["bytes"]))
    if len(variables) > 20:
        table.add_row(f"... {len(variables) - 20} more (--json lists all)", "", "", "")
    out.print(table)
    out.print(_ops_line(data, " nodes"), markup=False)
    for gaps in data.get("targets", {}).values():
        out.print(gaps["summary"], markup=False, highlight=False)
    if any(terms.CHECKED_OPS[0] in g["summary"] for g in data.get("targets", {}).values()):
        out.print(terms.line(terms.CHECKED_OPS), markup=False, style="dim")


def _ops_line(data: dict, unit: str = "") -> str:
    """`ops (N<unit>): Op n, ...`, the 15 commonest first."""
    ops = sorted(data.get("op_counts", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return f"ops ({sum(n for _, n in ops)}{unit}): " + \
        ", ".join(f"{op} {n}" for op, n in ops[:15]) + (" ..." if len(ops) > 15 else "")


def artifact(out, data: dict) -> None:
    """The rest of an artifact's report: its ops, and what its sidecar records."""
    out.print(_ops_line(data), markup=False)
    if data.get("opset"):
        out.print("opset: " + ", ".join(f"{k} {v}" for k, v in data["opset"].items()),
                  markup=False)
    car = data.get("sidecar")
    if car is None:
        out.print(data.get("sidecar_error") or f"no sidecar beside it ({data['path']}.json): not "
                  "written by graphfreeze, or copied without it", markup=False)
        return
    source = car.get("source") if isinstance(car.get("source"), dict) else {}  # untrusted
    out.print(f"sidecar: target {car['target']}, from {source.get('path', '?')} "
              f"({source.get('kind', '?')}), graphfreeze {car.get('graphfreeze_version', '?')}",
              markup=False)
    check = car.get("verification")
    if check:
        diffs = check.get("max_abs_diff")
        worst = ", ".join(f"{k} {v:.2g}" if type(v) in (int, float) else f"{k} {v!r}"
                          for k, v in (diffs.items() if isinstance(diffs, dict) else ()))
        out.print(f"verified: {'passed' if check.get('passed') else 'failed'} on "
                  f"{check.get('data', 'seeded inputs')}" +
                  (f" (max |diff| {worst})" if worst else ""), markup=False)
    else:
        out.print("verified: no (written with --no-verify)", markup=False)
    if data.get("golden"):
        out.print(f"golden outputs: {data['golden']} (`freeze verify {data['path']}` checks it "
                  "against them)", markup=False)


def device(data: dict) -> None:
    """`freeze inspect --device gpu`: the coverage line, then each op that falls back."""
    out = Console(highlight=False, soft_wrap=True)
    out.print(f"[bold]{literal(data['path'])}[/] " +
              literal(f"({data['judged']}): {data['device']}: {data['line']}"))
    for v in data["falls_back"]:
        out.print(f"  subgraph {v['subgraph']} op {v['index']} {v['op']}: {v['reason']}",
                  markup=False)
    out.print(f"judged by {data['checker']}", markup=False)


def targets(registry) -> None:
    table = Table(title="graphfreeze targets", show_lines=False)
    for col in ("target", "description", "stages", "provider"):
        table.add_column(col)
    for name in registry.target_names():
        target = registry.target(name)
        table.add_row(name, target.description, " → ".join(s.use for s in target.stages),
                      target.provider)
    sources = Table(title="model sources (detected in this order)", show_lines=False)
    for col in ("source", "what", "flag", "provider"):
        sources.add_column(col)
    for source in registry.sources():
        sources.add_row(source.name, source.summary, source.flag or "",
                        registry.provider("source", source.name))
    stages = Table(title="stages (what a target TOML can `use`)", show_lines=False)
    for col in ("stage", "what it does", "writes", "provider"):
        stages.add_column(col)
    for name in registry.names("stage"):
        stage = registry.stage(name)
        stages.add_row(name, stage.summary, stage.suffix or "", registry.provider("stage", name))
    passes = Table(title="graph passes (a strip/optimize stage's `passes`)", show_lines=False)
    for col in ("pass", "what it does", "provider"):
        passes.add_column(col)
    for name in registry.names("pass"):
        passes.add_row(name, registry.graph_pass(name).summary, registry.provider("pass", name))
    console = Console(soft_wrap=True)
    for part in (table, sources, stages, passes):
        console.print(part)
