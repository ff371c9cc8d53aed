"""What `--explain` (the divergence locator on a passing run) costs on ResNet50.

    python bench/bench_explain.py [--repeat 3] [--targets android,onnx] [--markdown FILE]

The weights-only ResNet50 checkpoint of bench_freeze.py (built once into bench/.cache) is frozen
with and without `--explain`, each `--repeat` times as a child process; wall time and peak RSS
medians, and the extra time as a share of the run's own. Issue target: at most 1x.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import ensure_checkpoint, timed_runs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--targets", default="android,onnx")
    parser.add_argument("--cache", default=str(ROOT / "bench" / ".cache"))
    parser.add_argument("--markdown")
    args = parser.parse_args()
    ckpt = ensure_checkpoint(Path(args.cache), "weights-only")
    freeze = str(Path(sys.executable).with_name("freeze"))
    rows = ["| targets | run | median wall s | median peak RSS MB | extra vs plain |",
            "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for targets in args.targets.split(","):
            base = [freeze, "--ckpt", str(ckpt), "--outputs", "probs", "--target", targets,
                    "-o", f"{tmp}/", "--force"]
            plain = timed_runs("plain", base, args.repeat, Path(tmp) / "plain.log")
            explain = timed_runs("explain", [*base, "--explain"], args.repeat,
                                 Path(tmp) / "explain.log")
            if "error" in plain or "error" in explain:
                rows.append(f"| {targets} | FAILED | | | |")
                continue
            extra = (explain["wall"] - plain["wall"]) / plain["wall"]
            rows.append(f"| {targets} | plain | {plain['wall']:.2f} | {plain['rss']:.0f} | |")
            rows.append(f"| {targets} | --explain | {explain['wall']:.2f} | {explain['rss']:.0f} "
                        f"| +{extra:.0%} ({'meets' if extra <= 1.0 else 'misses'} <= 100%) |")
    text = "\n".join(rows)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(f"# bench_explain.py\n\n{text}\n")


if __name__ == "__main__":
    main()
