"""Benchmark `freeze scan` on 100 model files: copies of the sample and hostile models.

    python bench/bench_scan.py [--files 100] [--repeat 3] [--single 10] [--markdown FILE]
                               [--against NAME=PYTHONPATH ...]

Issue 17's goal: at most 0.2 s per file, one process scanning all of them; issue 25's: one
`freeze scan FILE` process in at most 0.3 s (median). Per-file invocations and `freeze --help`
are timed in wall and CPU (user + sys) seconds, for this checkout and for each `--against`
checkout (a PYTHONPATH entry holding its graphfreeze and graphfreeze_cli packages), alternating
so that load falls on both alike. Every hostile copy must be flagged and every clean one pass.
The models are built once into bench/.cache/scan by models/build_samples.py, other_sources.py
and hostile.py.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import CHILD_ENV, ROOT, emit, run_child, tail  # noqa: E402

BUILDERS = {"samples": ["build_samples.py"], "other": ["other_sources.py"],
            "hostile": ["hostile.py"]}
FLAGGED = {"other": {"lambda.h5"}}  # besides every hostile model
PHASES = """import json, sys, time
t = time.perf_counter()
import graphfreeze_cli.main
t1 = time.perf_counter()
from graphfreeze.inspect.scan import scan
results = scan(sys.argv[1:])
print(json.dumps({"imports": t1 - t, "scan": time.perf_counter() - t1, "files": len(results),
                  "tensorflow": "tensorflow" in sys.modules}))
"""


def cpu_run(cmd: list[str], pythonpath: str | None) -> tuple[int, float, float]:
    """(returncode, wall s, CPU s = user + sys of the child) of one run, output discarded."""
    env = dict(CHILD_ENV)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                        check=False).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return rc, wall, cpu


def per_call(freeze: str, paths: list[Path], checkouts: dict[str, str | None],
             repeat: int) -> dict[str, dict[str, list[float]]]:
    """{checkout: {"scan wall", "scan cpu", "help wall", "help cpu": [...]}}, one fresh process
    per call, checkouts alternating call by call."""
    out = {name: {k: [] for k in ("scan wall", "scan cpu", "help wall", "help cpu")}
           for name in checkouts}
    for _ in range(repeat):
        for path in paths:
            for name, pythonpath in checkouts.items():
                for what, cmd in (("scan", [freeze, "scan", str(path)]),
                                  ("help", [freeze, "--help"])):
                    _, wall, cpu = cpu_run(cmd, pythonpath)
                    out[name][f"{what} wall"].append(wall)
                    out[name][f"{what} cpu"].append(cpu)
    return out


def ensure_models(cache: Path) -> dict[str, Path]:
    """group -> folder of built models (hostile ones aimed at cache/target)."""
    out = {}
    for group, (script,) in BUILDERS.items():
        folder = cache / group
        if not folder.exists():
            extra = [str(cache / "target")] if group == "hostile" else []
            log = cache / f"{group}.log"
            cache.mkdir(parents=True, exist_ok=True)
            rc, wall, _ = run_child([sys.executable, str(ROOT / "models" / script), str(folder),
                                     *extra], log)
            if rc != 0:
                shutil.rmtree(folder, ignore_errors=True)
                sys.exit(f"building {group} failed:\n{tail(log)}")
            print(f"built {group} in {wall:.1f} s", file=sys.stderr)
        out[group] = folder
    return out


def copies(models: dict[str, Path], dest: Path, count: int) -> dict[Path, bool]:
    """`count` model copies under dest (cycling through every model): path -> hostile?"""
    entries = [(group, p) for group, folder in models.items() for p in sorted(folder.iterdir())
               if not p.name.endswith((".log", ".txt"))]
    made = {}
    for i, (group, src) in zip(range(count), itertools.cycle(entries)):
        target = dest / f"{i:03d}_{group}" / src.name
        target.parent.mkdir(parents=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, target)
        made[target] = group == "hostile" or src.name in FLAGGED.get(group, ())
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--single", type=int, default=10, help="per-file invocations timed")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache" / "scan")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--against", action="append", default=[], metavar="NAME=PYTHONPATH",
                        help="also time per-file calls of another checkout (e.g. main=/tmp/main)")
    args = parser.parse_args()
    checkouts = {"this": os.environ.get("PYTHONPATH")}
    checkouts |= dict(a.split("=", 1) for a in args.against)
    freeze = str(Path(sys.executable).parent / "freeze")
    models = ensure_models(args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        made = copies(models, work / "models", args.files)
        walls, log = [], work / "run.log"
        for i in range(args.repeat):
            rc, wall, rss = run_child([freeze, "scan", "--json", str(work / "models")], log)
            walls.append(wall)
            print(f"  all {len(made)} run {i + 1}: {wall:.2f} s, {rss:.0f} MB, rc {rc}",
                  file=sys.stderr)
        text = log.read_text()
        report = json.loads(text[text.index("{"):])
        flagged = {Path(f["path"]): not f["ok"] for f in report["files"]}
        wrong = sorted(str(p) for p, bad in made.items() if flagged.get(p) != bad)
        singles = list(made)[::max(1, len(made) // args.single)][:args.single]
        calls = per_call(freeze, singles, checkouts, args.repeat)
        phases = []
        for _ in range(args.repeat):
            rc, _, _ = run_child([sys.executable, "-c", PHASES, str(work / "models")], log)
            phases.append(json.loads(log.read_text().strip().splitlines()[-1]))
    hostile = sum(made.values())
    one = statistics.median(walls)
    med = statistics.median
    rows = [("one process, all files (`freeze scan DIR`)", f"{one:.2f}", f"{one / len(made):.3f}"),
            ("of which the CLI's imports (TensorFlow: "
             f"{'imported' if any(p['tensorflow'] for p in phases) else 'never'})",
             f"{med(p['imports'] for p in phases):.2f}", ""),
            ("of which the checks, all files, after the imports",
             f"{med(p['scan'] for p in phases):.2f}",
             f"{med(p['scan'] for p in phases) / len(made):.4f}")]
    per = ["| checkout | `freeze scan FILE` wall s | CPU s | `freeze --help` wall s | CPU s |",
           "|---|---|---|---|---|",
           *[f"| {name} | {med(c['scan wall']):.3f} | {med(c['scan cpu']):.3f} | "
             f"{med(c['help wall']):.3f} | {med(c['help cpu']):.3f} |"
             for name, c in calls.items()]]
    single = med(calls["this"]["scan wall"])
    lines = [f"{len(made)} model files ({hostile} to flag, {len(made) - hostile} clean), "
             f"medians of {args.repeat} runs:", "", "| run | wall s | s per file |",
             "|---|---|---|", *[f"| {a} | {b} | {c} |" for a, b, c in rows], "",
             f"One process per call, {len(singles)} of the files (medians; CPU = user + sys):",
             "", *per, "",
             f"flagged as expected: {len(made) - len(wrong)}/{len(made)}"
             + (f"; WRONG: {', '.join(wrong)}" if wrong else ""),
             f"goal <= 0.2 s per file (one process): {'met' if one / len(made) <= 0.2 else 'MISSED'}",
             f"goal <= 0.3 s per `freeze scan FILE`: {'met' if single <= 0.3 else 'MISSED'}"]
    text = "\n".join(lines) + "\n"
    emit(text, args.markdown)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
