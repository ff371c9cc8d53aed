"""What verification on the user's data costs (issue 25: at most 1.25x the conversion alone).

    python bench/bench_verify_cost.py [--rounds 3] [--rows 500] [--against NAME=PYTHONPATH ...]
                                      [--markdown FILE]

`freeze model.keras --target tflite` on a Keras 3 ResNet50 (models/shapes.py, 64x64 inputs,
trained one epoch: the weights do not change the cost), with `--no-verify` and with
`--verify-data` of ROWS images, each call a fresh process, the two modes and every checkout
alternating so that load falls on all alike (`--against`: another checkout's PYTHONPATH, a folder
holding its graphfreeze and graphfreeze_cli packages). Wall and CPU (user + sys) seconds, medians.
The model is built once into bench/.cache/verify_cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import ROOT, emit  # noqa: E402
from bench_scan import cpu_run  # noqa: E402

CACHE = ROOT / "bench" / ".cache" / "verify_cost"


def build(rows: int) -> Path:
    if not (CACHE / "model.keras").exists():
        subprocess.run([sys.executable, str(ROOT / "models" / "shapes.py"), str(CACHE), "--kind",
                        "resnet50", "--train", "200", "--epochs", "1", "--val", str(rows)],
                       check=True, stdout=subprocess.DEVNULL)
    data = CACHE / f"val_{rows}.npz"
    if not data.exists():
        with np.load(CACHE / "val.npz") as val:
            np.savez(data, image=val["image"][:rows], labels=val["labels"][:rows])
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--against", action="append", default=[], metavar="NAME=PYTHONPATH")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    data = build(args.rows)
    checkouts = {"this": os.environ.get("PYTHONPATH"), **dict(a.split("=", 1)
                                                              for a in args.against)}
    modes = {"--no-verify": ["--no-verify"], f"--verify-data {args.rows}": ["--verify-data",
                                                                           str(data)]}
    freeze = str(Path(sys.executable).parent / "freeze")
    times = {(c, m): [] for c in checkouts for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, path in checkouts.items():
                for mode, extra in modes.items():
                    rc, wall, cpu = cpu_run([freeze, str(CACHE / "model.keras"), "--target",
                                             "tflite", "-o", f"{tmp}/cost.tflite", "--force",
                                             *extra], path)
                    if rc:
                        sys.exit(f"{name} {mode}: exit {rc}")
                    times[name, mode].append((wall, cpu))
                    print(f"  round {r + 1} {name} {mode}: {wall:.2f} s wall, {cpu:.2f} s CPU",
                          file=sys.stderr)
    lines = ["| checkout | --no-verify wall s (CPU s) | " + f"--verify-data {args.rows} wall s "
             "(CPU s) | ratio (wall) |", "|---|---|---|---|"]
    for name in checkouts:
        base, verified = ([statistics.median(x[i] for x in times[name, m]) for i in (0, 1)]
                          for m in modes)
        lines.append(f"| {name} | {base[0]:.2f} ({base[1]:.2f}) | {verified[0]:.2f} "
                     f"({verified[1]:.2f}) | {verified[0] / base[0]:.2f}x |")
    text = "\n".join(lines) + "\n"
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
