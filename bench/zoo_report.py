"""docs/COVERAGE.md from zoo_coverage.py's results: model x target cells, peers beside ours,
time and peak RSS per model, totals, and the refusal/failure lines grouped by cause."""

from __future__ import annotations

import time

NOTES = "\n## Notes (by hand; kept when the table is rewritten)\n"
TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "edge-int8", "onnx"]


def _size(n) -> str:
    if n is None:
        return "?"
    if n < 1e3:
        return f"{n} B"
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"


def _cell(cell: dict | None, peer: dict | None, causes: dict) -> str:
    if cell is None:
        return ""
    if cell["status"] == "ok":
        diff = cell.get("max_diff")
        text = f"ok {diff:.1e}, {_size(cell.get('bytes'))}" if diff is not None else \
            f"ok (unverified), {_size(cell.get('bytes'))}"
    else:
        number = causes.setdefault(cell["line"], len(causes) + 1)
        text = f"refused [{number}]" if cell["status"] == "refused" else f"**FAILED** [{number}]"
    if peer and peer.get("status") == "ok":
        text += f" / peer ok {_size(peer.get('bytes'))}"
    elif peer and peer.get("status") == "failed":
        text += " / peer ✗"
    return text


def internal(cell: dict) -> bool:
    """An internal error: exit 1, a signal or a hang (not a refusal, not another exit code)."""
    return cell["status"] == "failed" and (cell.get("rc", 1) in (1,) or cell.get("rc", 1) < 0
                                           or cell.get("hung", False))


def totals(results: dict) -> dict:
    cells = ok = failed = internals = missed = slow = peer_ok = convertible = 0
    for record in results.values():
        peer_cells = record.get("peers", {}).get("cells", {})
        for target, cell in record["cells"].items():
            cells += 1
            ok += cell["status"] == "ok"
            convertible += cell["status"] == "ok" or \
                peer_cells.get(target, {}).get("status") == "ok"
            failed += cell["status"] == "failed"
            internals += internal(cell)
            if peer_cells.get(target, {}).get("status") == "ok":
                peer_ok += 1
                missed += cell["status"] != "ok"
        peer_seconds = record.get("peers", {}).get("seconds")
        if peer_seconds and record["seconds"] > 2 * (peer_seconds + 10):
            slow += 1
    return {"models": len(results), "cells": cells, "ok": ok, "failed": failed,
            "internal": internals, "convertible": convertible,
            "peer_ok": peer_ok, "missed": missed, "slow": slow}


def summary_line(name: str, record: dict) -> str:
    counts = {}
    for cell in record["cells"].values():
        counts[cell["status"]] = counts.get(cell["status"], 0) + 1
    return (f"{name}: {record['seconds']} s, {record['rss_mb']} MB, "
            + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))


def markdown(results: dict, order: list[str], title: str = "Zoo coverage (issue 14)",
             what: str = "every models/zoo.py model") -> str:
    columns = TARGETS + [t for t in ("openvino",) if any(
        t in r["cells"] for r in results.values())]
    causes: dict[str, int] = {}
    where: dict[str, list[str]] = {}
    rows = []
    for name in [n for n in order if n in results]:
        record = results[name]
        peer_cells = record.get("peers", {}).get("cells", {})
        cells = [_cell(record["cells"].get(t), peer_cells.get(t), causes) for t in columns]
        for target, cell in record["cells"].items():
            if cell["status"] != "ok":
                where.setdefault(cell["line"], []).append(f"{name} → {target}")
        peer_s = record.get("peers", {}).get("seconds")
        rows.append(f"| {name} | {record['kind']} | " + " | ".join(cells)
                    + f" | {record['seconds']} | {'' if peer_s is None else round(peer_s, 1)}"
                    f" | {record['rss_mb']} |")
    t = totals(results)
    share = 100 * t["ok"] / t["cells"] if t["cells"] else 0
    lines = [
        f"# {title}", "",
        "Written by `bench/zoo_coverage.py` (`make zoo`) on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {what}, "
        "converted to every target it lists in ONE `freeze PATH ARGS --target ... -o DIR/ "
        "--force` call (a subprocess; when that call fails, one call per target classifies each "
        "cell). Peers on the same model, each target in a child process: TFLiteConverter "
        "(from_keras_model / from_saved_model / from_session on the restored checkpoint; "
        "edge-int8 with a representative dataset, or optimizations=[DEFAULT] for QAT models), "
        "tf2onnx's Python API (Keras 3's model.export for Keras 3 files), "
        "openvino.convert_model, and TensorFlow's freeze_graph for checkpoints; a peer is ok if "
        "its artifact runs on a sample input (LiteRT, onnxruntime, OpenVINO, a TF session).", "",
        "Cell: `ok MAXDIFF, SIZE` (verified against the original; max |diff| from the "
        "sidecar) / `refused [n]` (exit 3, 5 or 6; line n below) / `FAILED [n]` (internal "
        "error, a signal, a hang, or an exit code other than 3/5/6); `/ peer ok SIZE|✗` is the "
        "peer's result on the same cell. "
        "`s` is the wall time of our one call (TensorFlow import, load, every target, "
        "verification); `peer s` the peers' conversion time summed; RSS is our call's peak.", "",
        "## Totals", "",
        f"- models: {t['models']}; cells: {t['cells']}; ok: {t['ok']} ({share:.1f} %)",
        f"- cells that some converter writes (ours or a peer's): {t['convertible']}; ours ok: "
        f"{t['ok']} ({100 * t['ok'] / max(t['convertible'], 1):.1f} %); the other "
        f"{t['cells'] - t['convertible']} cells no converter takes (each refused in one line "
        "below)",
        f"- FAILED cells: {t['failed']}, of which internal errors (exit 1, a signal or a "
        f"hang): {t['internal']}"
        + ("; the rest exit with a code that does not fit the cause" if t["failed"] >
           t["internal"] else ""),
        f"- peer successes we miss: {t['missed']} of {t['peer_ok']} cells where a peer worked",
        f"- models whose one call took more than 2× (peers' time + 10 s of start-up): "
        f"{t['slow']}", "",
        "## Table", "",
        "| model | kind | " + " | ".join(columns) + " | s | peer s | RSS MB |",
        "|---" * (len(columns) + 5) + "|", *rows, "",
        "## Refusals and failures by cause", "",
    ]
    for line, number in sorted(causes.items(), key=lambda kv: kv[1]):
        cells = where.get(line, [])
        lines.append(f"{number}. `{line}` — {len(cells)} cell(s): {', '.join(cells)}")
    missing = [n for n in order if n not in results]
    if missing:
        lines += ["", f"Not run yet: {', '.join(missing)}."]
    lines += ["", "Reproduce one model: `python bench/zoo_coverage.py --only NAME` (`--set families` "
              "for the second zoo; builds "
              "the zoo into bench/.cache/zoo; the freeze command for a cell is "
              "`PYTHONPATH=models freeze bench/.cache/zoo/NAME/<path> <args> --target T -o "
              "DIR/` with path and args from its zoo.json).", ""]
    return "\n".join(lines)
