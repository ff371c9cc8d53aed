"""The repro: the reduced graph as a frozen `.pb` (+ `.npz` of its inputs for a divergence), a
script that runs the stock converter on it (TFLiteConverter, tf2onnx, OpenVINO's
convert_model; for a divergence, also the converted model against TensorFlow on the inputs),
and a `.json` saying what fails and how it was found. The script is then run once, so the
report says whether the stock converter fails on it too."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from graphfreeze.io import storage
from graphfreeze.reduce.stock import script

STOCK_TIMEOUT = 600.0


@dataclass(frozen=True)
class Reduced:
    files: dict  # kind (pb, npz, script, json) -> path written
    command: str  # the one command that reproduces it with the stock converter
    failure: str  # how it fails (the original's signature, as said)
    nodes: tuple[int, int]  # nodes before, after
    ops: dict  # the repro's op counts
    trials: int
    seconds: float
    stock: dict  # the stock command's exit code and last line, and whether it fails too
    same_in_tries: str = "1/1"  # the repro's tries that failed the same way


def write(job, outputs, cuts, out_dir, tries, start, force=False):
    from graphfreeze.graph.graphdefs import op_counts

    sub = job.graph.subgraph(outputs, cuts)
    feeds = job._feeds(sub)  # noqa: SLF001
    request = job.request
    stem = job.prepared.source.stem(request.source, job.prepared.source_options)
    base = (storage.join(out_dir.rstrip("/"), storage.basename(stem)) if out_dir else stem) + \
        f".{job.target}.reduced"
    paths = {"pb": base + ".pb", "script": base + ".py", "json": base + ".json"}
    if feeds:
        paths["npz"] = base + ".npz"
    drawn = overlay(job, sub, outputs) if job.sig.kind == "diverges" else None
    if drawn:
        from graphfreeze.explain.overlay import overlay_path

        paths["overlay"] = overlay_path(paths["pb"], "divergence")
    storage.check_writable(list(paths.values()), force)
    inputs = [(n.name, _dims(n.attr["shape"].shape)) for n in sub.node
              if n.op == "Placeholder"]
    atol, mean = _tolerances(job.verify_options) if feeds else (None, None)
    text = script(job.format, job.export_options,
                  storage.basename(paths["pb"]),
                  storage.basename(paths["npz"]) if feeds else None, inputs, list(outputs),
                  job.sig.said(), job.target, atol, mean)
    command = f"python {storage.basename(paths['script'])}"
    ours = (f"freeze {storage.basename(paths['pb'])} --target {job.target} --outputs "
            f"{','.join(outputs)}" + (f" --inputs {','.join(n for n, _ in inputs)}"
                                      if inputs else "") +
            (f" --verify-data {storage.basename(paths['npz'])}" if feeds else " --no-verify"))
    record = {"target": job.target, "source": request.source, "failure": job.sig.said(),
              "kind": job.sig.kind, "nodes_before": len(job.graph_def.node),
              "nodes_after": len(sub.node), "ops": op_counts(sub), "outputs": list(outputs),
              "inputs": [n for n, _ in inputs], "trials": job.trials.count,
              "trial_seconds": round(job.trials.seconds, 1),
              "seconds": round(time.monotonic() - start, 1),
              "stock_command": command,
              "freeze_command": ours,
              **({"explain": {"divergence": storage.basename(paths["overlay"])}}
                 if drawn else {})}
    import io

    import numpy as np

    with storage.Transaction(force) as txn:
        txn.put(paths["pb"], sub.SerializeToString())
        txn.put(paths["script"], text.encode())
        if feeds:
            buffer = io.BytesIO()
            np.savez(buffer, **feeds)
            txn.put(paths["npz"], buffer.getvalue())
        if drawn:
            txn.put(paths["overlay"], (json.dumps(drawn, indent=1, sort_keys=True) +
                                       "\n").encode())
        txn.put(paths["json"], (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())
        txn.commit()
    running = start_stock(paths["script"])  # while the repro is tried again, here
    again = [job.trial(sub, outputs, job.verify, feeds) for _ in range(max(0, tries - 1))]
    record["same_in_tries"] = f"{1 + sum(job.sig.matches(s) for s in again)}/{max(1, tries)}"
    record["trials"], record["trial_seconds"] = job.trials.count, round(job.trials.seconds, 1)
    stock = stock_result(running, job.sig)
    record["stock"], record["seconds"] = stock, round(time.monotonic() - start, 1)
    _rewrite(paths["json"], record)
    return Reduced(paths, command, job.sig.said(), (len(job.graph_def.node), len(sub.node)),
                   op_counts(sub), job.trials.count, time.monotonic() - start, stock,
                   record["same_in_tries"])


def overlay(job, sub, outputs) -> dict | None:
    """The reduced divergence drawn for Model Explorer (a node-data file keyed by the reduced
    .pb's nodes, as --explain draws an artifact's: explain/overlay.py), or None when the
    locator did not report each node's |diff|."""
    from graphfreeze.explain.overlay import RED_AT, node_data
    from graphfreeze.plugins import by_index

    found = divergence_of(job, sub, outputs) or {}
    values = found.get("per_node") or {}
    keys = by_index(sub, list(values))
    if not keys:
        return None
    measure = "mean |diff|" if found.get("metric") == "mean_abs_diff" else "max |diff|"
    return node_data(f"{measure} of the {job.target} model against TensorFlow (tolerance "
                     f"{found.get('tolerance', 0):g})",
                     {keys[n]: tuple(v) for n, v in values.items() if n in keys},
                     RED_AT["divergence"])


def divergence_of(job, sub, outputs) -> dict | None:
    """Where the reduced graph `sub` diverges (its trial's locator report): from the search,
    else one more trial."""
    from graphfreeze.reduce.cut import key

    found = job.divergences.get(key(sub))
    if found is None and job.feeds:
        job.trial(sub, outputs, job.verify, job._feeds(sub))  # noqa: SLF001
        found = job.divergence
    return found


def _rewrite(path: str, record: dict) -> None:
    with storage.Transaction(True) as txn:
        txn.put(path, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())
        txn.commit()


def _dims(shape):
    return None if shape.unknown_rank else [d.size if d.size >= 0 else None for d in shape.dim]


def _tolerances(options) -> tuple[float | None, float | None]:
    if options is None:
        return None, None
    atol = options.tolerance_for("")[0]
    return (atol if math.isfinite(atol) else None), options.mean_tolerance


def start_stock(path: str):
    """Start the repro script (a local file) in a fresh Python (or say why not: a dict)."""
    if storage.is_remote(path):
        return {"ran": False, "why": "the repro is not on a local disk"}
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen([sys.executable, os.path.basename(path)],
                            cwd=os.path.dirname(os.path.abspath(path)), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stock_result(process, sig) -> dict:
    """What the repro script did: does the stock converter fail, and does it name the same op
    or node?"""
    if isinstance(process, dict):
        return process
    try:
        out, _ = process.communicate(timeout=STOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return {"ran": True, "exit_code": None, "fails": True, "same": sig.kind == "timeout",
                "last_line": f"timed out after {STOCK_TIMEOUT:g} s"}
    done = subprocess.CompletedProcess(process.args, process.returncode, out or "", "")
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if line.startswith("REPRO:")), None)
    last = said or (lines[-1] if lines else "")
    text = done.stdout + done.stderr
    named = [*sig.ops, *sig.nodes]
    if sig.kind == "diverges":  # the script compares the converted model with TensorFlow
        same = done.returncode == 1 and "REPRO: diverges" in text
    else:
        same = done.returncode != 0 and (not named or any(name in text for name in named))
    last = last.removeprefix("REPRO: ")
    at = min([last.find(name) for name in named if name in last] or [0])
    if len(last) > 300 and at > 100:  # the words around the op or node it names
        last = last[:last.find(": ") + 2] + "..." + last[at - 100:at + 200] + "..."
    return {"ran": True, "exit_code": done.returncode, "fails": done.returncode != 0,
            "same": same, "last_line": last[:400]}
