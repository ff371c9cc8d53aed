"""Benchmark `freeze scan` on 100 model files: copies of the sample and hostile models.

    python bench/bench_scan.py [--files 100] [--repeat 3] [--single 10] [--markdown FILE]

Issue 17's goal: at most 0.2 s per file, one process scanning all of them; per-file invocations
(one `freeze scan FILE` each) show what TensorFlow's import costs every time. Every hostile copy
must be flagged and every clean one pass. The models are built once into bench/.cache/scan by
models/build_samples.py, other_sources.py and hostile.py.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import ROOT, run_child, tail  # noqa: E402

BUILDERS = {"samples": ["build_samples.py"], "other": ["other_sources.py"],
            "hostile": ["hostile.py"]}
FLAGGED = {"other": {"lambda.h5"}}  # besides every hostile model
PHASES = """import json, sys, time
t = time.perf_counter()
from graphfreeze.process.quiet import import_tensorflow_quietly
import_tensorflow_quietly()
t1 = time.perf_counter()
from graphfreeze.inspect.scan import scan
results = scan(sys.argv[1:])
print(json.dumps({"tf_import": t1 - t, "scan": time.perf_counter() - t1, "files": len(results)}))
"""


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
    args = parser.parse_args()
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
        singles = []
        for path in list(made)[::max(1, len(made) // args.single)][:args.single]:
            rc, wall, _ = run_child([freeze, "scan", str(path)], log)
            singles.append(wall)
        phases = []
        for _ in range(args.repeat):
            rc, _, _ = run_child([sys.executable, "-c", PHASES, str(work / "models")], log)
            phases.append(json.loads(log.read_text().strip().splitlines()[-1]))
    hostile = sum(made.values())
    one = statistics.median(walls)
    rows = [("one process, all files (`freeze scan DIR`)", f"{one:.2f}", f"{one / len(made):.3f}"),
            (f"one process per file (`freeze scan FILE`, {len(singles)} files)",
             f"{sum(singles):.2f}", f"{statistics.median(singles):.3f}"),
            ("of which TensorFlow's import (once per process)",
             f"{statistics.median(p['tf_import'] for p in phases):.2f}", ""),
            ("of which the checks, all files, after the import",
             f"{statistics.median(p['scan'] for p in phases):.2f}",
             f"{statistics.median(p['scan'] for p in phases) / len(made):.4f}")]
    lines = [f"{len(made)} model files ({hostile} to flag, {len(made) - hostile} clean), "
             f"medians of {args.repeat} runs:", "", "| run | wall s | s per file |",
             "|---|---|---|", *[f"| {a} | {b} | {c} |" for a, b, c in rows], "",
             f"flagged as expected: {len(made) - len(wrong)}/{len(made)}"
             + (f"; WRONG: {', '.join(wrong)}" if wrong else ""),
             f"goal <= 0.2 s per file (one process): {'met' if one / len(made) <= 0.2 else 'MISSED'}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
