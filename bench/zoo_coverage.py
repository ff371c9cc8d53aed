"""The zoo coverage run (issue 14): every models/zoo.py model to every target it lists, in ONE
`freeze` call per model (a real subprocess: wall time, peak RSS from os.wait4), and one call per
target where that call fails, to classify each cell; the peers (TFLiteConverter, tf2onnx,
freeze_graph: bench/zoo_peers.py) on the same model beside ours. Writes docs/COVERAGE.md.

    python bench/zoo_coverage.py [--set zoo|families] [--zoo DIR] [--only NAME,NAME] [--jobs 1]
                                 [--no-peers]

--set families runs the second zoo (models/families.py, issue 24) into docs/COVERAGE_FAMILIES.md.

Cell: ok (max |diff| from the sidecar, size) / refused (exit 3, 5 or 6: the one error line) /
FAILED (exit 1 "internal error", any other exit, a signal, or a hang past --timeout).
Resumable: results are kept per model in --results (bench/.cache/zoo_coverage.json), so
`--only NAME` refreshes one model and the report covers every model run so far.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import zoo_report  # noqa: E402

REFUSED = (3, 5, 6)


def run(cmd: list[str], timeout: float, cwd: Path | None = None) -> dict:
    """Run CMD in its own session (in `cwd`: the model's folder, where its zoo.json args are
    relative paths); returns rc (or signal), output, seconds, peak RSS (MB)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "models"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=cwd)
        hung = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                hung = True
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = 0  # reaped here, not by Popen
        seconds = time.perf_counter() - start
        log.seek(0)
        output = log.read().decode(errors="replace")
    return {"rc": os.waitstatus_to_exitcode(status), "hung": hung, "output": output,
            "seconds": round(seconds, 1), "rss_mb": round(usage.ru_maxrss / 1024)}


def error_line(result: dict, *folders: Path) -> str:
    """The call's one error line, with our folders left out so causes group across cells."""
    line = _error_line(result)
    for folder in folders:
        line = line.replace(f"{folder}/", "").replace(str(folder), ".")
    return line


def _error_line(result: dict) -> str:
    if result["hung"]:
        return "hang: killed after the timeout"
    lines = [ln for ln in result["output"].splitlines() if ln.startswith("error:")
             or ln.startswith("internal error")]
    if lines:
        return lines[-1]
    if result["rc"] < 0:
        return f"killed by signal {-result['rc']}"
    tail = [ln for ln in result["output"].splitlines() if ln.strip()]
    return f"exit {result['rc']}: " + (tail[-1] if tail else "no message")


def classify(result: dict, *folders: Path) -> dict:
    status = "refused" if result["rc"] in REFUSED and not result["hung"] else "failed"
    return {"status": status, "line": error_line(result, *folders), "rc": result["rc"],
            "hung": result["hung"]}


def sidecar_cells(out: Path, targets: list[str]) -> dict:
    """target -> ok cell, read from the sidecars written into OUT."""
    cells = {}
    for car_path in out.glob("*.json"):
        car = json.loads(car_path.read_text())
        target = car.get("target")
        if target not in targets:
            continue
        diffs = (car.get("verification") or {}).get("max_abs_diff") or {}
        cells[target] = {"status": "ok", "bytes": car.get("bytes"),
                         "max_diff": max(diffs.values()) if diffs else None,
                         "verified": bool((car.get("verification") or {}).get("passed"))}
    return cells


def ours(name: str, folder: Path, work: Path, timeout: float) -> dict:
    folder, work = folder.resolve(), work.resolve()  # each call runs in the model's folder
    entry = json.loads((folder / "zoo.json").read_text())
    targets, path = entry["targets"], str(folder / entry["path"])
    freeze = str(Path(sys.executable).with_name("freeze"))
    out = work / name / "all"
    whole = run([freeze, path, *entry["args"], "--target", ",".join(targets),
                 "-o", f"{out}/", "--force"], timeout, cwd=folder)
    record = {"seconds": whole["seconds"], "rss_mb": whole["rss_mb"], "rc": whole["rc"],
              "targets": targets, "kind": entry["kind"], "build_seconds": entry.get("seconds")}
    cells = sidecar_cells(out, targets) if whole["rc"] == 0 else {}
    if whole["rc"] == 0:
        for target in targets:
            cells.setdefault(target, {"status": "failed", "line": "exit 0 but no artifact"})
    else:
        record["line"] = error_line(whole, out, folder)
        for target in targets:
            one_out = work / name / target
            single = run([freeze, path, *entry["args"], "--target", target,
                          "-o", f"{one_out}/", "--force"], timeout, cwd=folder)
            cell = sidecar_cells(one_out, [target]).get(target) if single["rc"] == 0 else None
            cells[target] = cell or classify(single, one_out, folder)
            cells[target]["seconds"] = single["seconds"]
    record["cells"] = cells
    return record


def peers(name: str, folder: Path, work: Path, timeout: float) -> dict:
    entry = json.loads((folder / "zoo.json").read_text())
    todo, found = list(entry["targets"]), {}
    script = str(ROOT / "bench" / "zoo_peers.py")
    while todo:  # one process for all; a crash or hang costs only the target it was on
        result = run([sys.executable, script, str(folder), str(work / name / "peers"),
                      ",".join(todo)], timeout)
        for line in result["output"].splitlines():
            if line.startswith("PEER "):
                cell = json.loads(line[5:])
                found[cell.pop("target")] = cell
        todo = [t for t in todo if t not in found]
        if todo:
            found[todo.pop(0)] = {"status": "failed", "error": error_line(result)}
    return {"seconds": sum(c.get("seconds", 0) for c in found.values()), "cells": found}


SETS = {"zoo": ("zoo.py", "COVERAGE.md"), "families": ("families.py", "COVERAGE_FAMILIES.md")}
TITLES = {"zoo": ("Zoo coverage (issue 14)", "every models/zoo.py model"),
          "families": ("Coverage of the families no test had seen (issue 24)",
                       "every models/families.py model (the second zoo)")}


def ensure_built(script: str, zoo: Path, names: list[str]) -> None:
    missing = [n for n in names if not (zoo / n / "zoo.json").exists()]
    if missing:
        subprocess.run([sys.executable, str(ROOT / "models" / script), str(zoo),
                        "--only", ",".join(missing)], check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=SETS, default="zoo", help="which zoo (default: zoo)")
    parser.add_argument("--zoo", type=Path, help="built models (default: bench/.cache/SET)")
    parser.add_argument("--only", help="comma-separated model names (default: all)")
    parser.add_argument("--results", type=Path,
                        help="default: bench/.cache/SET_coverage.json")
    parser.add_argument("--report", type=Path, help="default: docs/COVERAGE.md (zoo), "
                        "docs/COVERAGE_FAMILIES.md (families)")
    parser.add_argument("--work", type=Path, help="default: bench/.cache/SET_out")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per call")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="rewrite the report only")
    parser.add_argument("--merge", type=Path, nargs="*", default=[],
                        help="results files of other runs (shards) to fold into --results")
    args = parser.parse_args(argv)
    script, report = SETS[args.set]
    cache = ROOT / "bench" / ".cache"
    args.zoo = args.zoo or cache / args.set
    args.results = args.results or cache / f"{args.set}_coverage.json"
    args.report = args.report or ROOT / "docs" / report
    args.work = args.work or cache / f"{args.set}_out"
    listed = subprocess.run([sys.executable, str(ROOT / "models" / script), "--list"],
                            check=True, capture_output=True, text=True).stdout.split()
    names = args.only.split(",") if args.only else listed
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    for other in args.merge:
        results.update(json.loads(other.read_text()))
    if args.merge:
        args.results.write_text(json.dumps(results, indent=1, sort_keys=True))
    if not args.report_only:
        ensure_built(script, args.zoo, names)

        def one(name: str) -> tuple[str, dict]:
            folder = args.zoo / name
            record = ours(name, folder, args.work, args.timeout)
            if not args.no_peers:
                record["peers"] = peers(name, folder, args.work, args.timeout)
            elif "peers" in results.get(name, {}):
                record["peers"] = results[name]["peers"]
            return name, record

        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for name, record in pool.map(one, names):
                results[name] = record
                args.results.parent.mkdir(parents=True, exist_ok=True)
                args.results.write_text(json.dumps(results, indent=1, sort_keys=True))
                print(zoo_report.summary_line(name, record), flush=True)
    notes = args.report.read_text().partition(zoo_report.NOTES)[2] if args.report.exists() else ""
    text = zoo_report.markdown(results, listed, *TITLES[args.set])
    args.report.write_text(text + (zoo_report.NOTES + notes if notes.strip() else ""))
    print(f"wrote {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
