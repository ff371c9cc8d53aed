"""`freeze reduce` on ResNet50 with one op deep inside that a converter cannot take (issue 26).

    python bench/bench_reduce.py [--only erfinv,lgamma,digamma,softplus] [--markdown FILE]

models/families_reduce.py builds tf_keras ResNet50 (224x224, 1000 classes, random weights) as a
checkpoint with the op between the conv3 and conv4 stages (once, into bench/.cache/reduce/):
Erfinv (TFLite has no kernel), Lgamma (tf2onnx has no ONNX mapping), Digamma (OpenVINO's
TensorFlow frontend has no rule), Softplus(100 x) (TFLite's overflows to inf where
TensorFlow's does not: a divergence). Each is reduced with `freeze reduce` in a child process
(timed: wall clock, TensorFlow's imports included); the repro's size, the trials, and whether
the stock converter fails on the repro the same way come from the repro's .json. Issue targets:
the repro <= 10 nodes, found in <= 2 minutes, the stock converter failing the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {"erfinv": "tflite", "lgamma": "onnx", "digamma": "openvino", "softplus": "tflite"}


def build(cache: Path, op: str) -> Path:
    folder = cache / "reduce" / f"resnet50_{op}"
    if not (folder / "model.ckpt.index").exists():
        code = ("import sys; sys.path.insert(0, 'models'); import families_reduce as f; "
                f"print(f.resnet50({str(folder)!r}, {op!r}))")
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
    return folder


def reduce(folder: Path, target: str) -> dict:
    freeze = str(Path(sys.executable).with_name("freeze"))
    out = folder / "repro"
    start = time.monotonic()
    done = subprocess.run([freeze, "reduce", "model.ckpt", "--outputs", "probs", "--target",
                           target, "-o", f"{out}/", "--force"], cwd=folder, capture_output=True,
                          text=True)
    wall = time.monotonic() - start
    if done.returncode:
        return {"target": target, "wall": wall, "error": (done.stdout + done.stderr)[-500:]}
    record = json.loads((out / f"model.ckpt.{target}.reduced.json").read_text())
    return {**record, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--cache", default=str(ROOT / "bench" / ".cache"))
    parser.add_argument("--markdown")
    args = parser.parse_args()
    rows = ["| op (converter) | target | nodes before → after | repro ops | trials | "
            "wall s (1-min load) | stock converter on the repro |", "|---|---|---|---|---|---|---|"]
    for op in args.only.split(","):
        folder = build(Path(args.cache), op)
        r = reduce(folder, CASES[op])
        if "error" in r:
            rows.append(f"| {op} | {CASES[op]} | failed: {r['error']!r} | | | {r['wall']:.0f} | |")
        else:
            ops = ", ".join(f"{n}×{k}" if n > 1 else k for k, n in sorted(r["ops"].items()))
            stock = ("fails the same way" if r["stock"]["same"] else "does NOT fail the same "
                     "way") + f": {r['stock']['last_line'][:120]}"
            rows.append(f"| {op} ({CASES[op]}) | {r['target']} | {r['nodes_before']} → "
                        f"{r['nodes_after']} | {ops} | {r['trials']} | {r['wall']:.0f} "
                        f"(load {os.getloadavg()[0]:.1f}) | {stock} |")
        print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    if args.markdown:
        Path(args.markdown).write_text(text)
    print(text)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    main()
