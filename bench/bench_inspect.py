"""Benchmark `freeze inspect` against freeze_graph (checkpoint) and `saved_model_cli show --all`.

    python bench/bench_inspect.py [--repeat 5] [--markdown FILE]

The issue's bar: `freeze inspect` on the ResNet50 checkpoint answers in at most the time
freeze_graph takes to freeze it, and on a SavedModel faster than `saved_model_cli show --all`.
Checkpoints come from bench_freeze.py's cache; the ResNet50 SavedModel is built once by
models/resnet50_savedmodel.py into bench/.cache/savedmodel.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import PREFIX, ROOT, emit, ensure_checkpoint, run_child, tail, timed_runs  # noqa: E402


def ensure_savedmodel(cache: Path) -> Path:
    out = cache / "savedmodel"
    if not (out / "saved_model.pb").exists():
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "build.log"
            rc, wall, _ = run_child([sys.executable, str(ROOT / "models" / "resnet50_savedmodel.py"),
                                     "--out", str(out)], log)
            if rc != 0:
                sys.exit(f"building the SavedModel failed:\n{tail(log)}")
        print(f"built {out} in {wall:.1f} s", file=sys.stderr)
    return out


def timed(cmd: list[str], repeat: int, workdir: Path) -> tuple[float, float]:
    result = timed_runs(shlex.join(cmd[-4:]), cmd, repeat, workdir / "run.log")
    if "error" in result:
        sys.exit(f"{shlex.join(cmd)} {result['error']}")
    return result["wall"], result["rss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", default="weights-only,adam")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    freeze = str(Path(sys.executable).parent / "freeze")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for case in [c for c in args.cases.split(",") if c]:
            prefix = ensure_checkpoint(args.cache, case)
            peer = [sys.executable, "-m", "tensorflow.python.tools.freeze_graph",
                    f"--input_meta_graph={prefix}.meta", f"--input_checkpoint={prefix}",
                    "--output_node_names=probs", f"--output_graph={workdir}/fg.pb",
                    "--input_binary"]
            rows.append((f"checkpoint {case} ({PREFIX})", "freeze_graph (freezing it)",
                         *timed(peer, args.repeat, workdir)))
            rows.append((f"checkpoint {case} ({PREFIX})", "freeze inspect",
                         *timed([freeze, "inspect", str(prefix)], args.repeat, workdir)))
            rows.append((f"checkpoint {case} ({PREFIX})", "freeze inspect --json",
                         *timed([freeze, "inspect", str(prefix), "--json"], args.repeat, workdir)))
        saved = ensure_savedmodel(args.cache)
        cli = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "show", "--dir",
               str(saved), "--all"]
        rows.append(("SavedModel ResNet50 (TF2)", "saved_model_cli show --all",
                     *timed(cli, args.repeat, workdir)))
        rows.append(("SavedModel ResNet50 (TF2)", "freeze inspect",
                     *timed([freeze, "inspect", str(saved)], args.repeat, workdir)))
    lines = ["| model | tool | median wall s | median peak RSS MB |", "|---|---|---|---|"]
    lines += [f"| {m} | {t} | {w:.2f} | {r:.0f} |" for m, t, w, r in rows]
    text = "\n".join(lines) + "\n"
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
