"""The code before a refactor against the code now, side by side in one run: every artifact and
sidecar byte-identical (the sample models, every built-in target), and the bench scripts' times.

    python bench/bench_compare.py --before DIR [--only identical|speed] [--rounds N]
                                  [--markdown FILE]

DIR is a checkout of the earlier commit (`git worktree add /tmp/before <commit>`); its packages
are put first on PYTHONPATH (`graphfreeze` -> DIR/converters, `graphfreeze_cli` -> DIR/cli), the
same interpreter and installed dependencies run both.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("android,server,tflite,tflite-fp16,tflite-dynamic,edge-int8,edge-int16x8,onnx,onnx-int8,"
           "onnx-fp16,openvino")
SAMPLES = {"iris": "probs", "iris_resource": "probs", "iris_partitioned": "probs",
           "cnn_v1": "probs", "cnn_v2": "probs"}
OTHER = {"tf2_savedmodel": None, "tf1_savedmodel": None, "model.keras": None, "frozen.pb": "probs"}


def environment(before: Path | None) -> dict:
    env = dict(os.environ)
    if before is not None:
        pkg = Path(tempfile.mkdtemp(prefix="before-pkg-"))
        (pkg / "graphfreeze").symlink_to(before / "converters")
        (pkg / "graphfreeze_cli").symlink_to(before / "cli")
        env["PYTHONPATH"] = os.pathsep.join([str(pkg), env.get("PYTHONPATH", "")])
    return env


def freeze(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", *args], env=env,
                          capture_output=True, text=True)


def sidecar_keys(a: Path, b: Path) -> list[str]:
    """The top-level keys whose values differ between two sidecars."""
    import json

    x, y = json.loads(a.read_text()), json.loads(b.read_text())
    return sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def identical(before: Path, models: Path) -> list[str]:
    rows = ["| model | files | identical | differing |", "|---|---|---|---|"]
    envs = {"before": environment(before), "now": environment(None)}
    for name, output in {**SAMPLES, **OTHER}.items():
        src = models / "samples" / name / "model.ckpt-200" if name in SAMPLES else \
            models / "other" / name
        results, outs = {}, {}
        for label, env in envs.items():
            out = outs[label] = Path(tempfile.mkdtemp(prefix=f"{label}-"))
            args = [str(src), "--target", TARGETS, "-o", f"{out}/"]
            args += ["--outputs", output] if output else []
            done = freeze(env, *args)
            if done.returncode:
                results[label] = {"error": done.stderr.strip()[-200:]}
            else:
                results[label] = digests(out)
        a, b = results["before"], results["now"]
        if "error" in a or "error" in b:
            rows.append(f"| {name} | - | - | error: {a.get('error') or b.get('error')} |")
            continue
        differing = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        shown = [f"{k} ({', '.join(sidecar_keys(outs['before'] / k, outs['now'] / k))})"
                 if k.endswith(".json") and k in a and k in b else k for k in differing]
        rows.append(f"| {name} | {len(a)} | {len(a) - len(differing)} | "
                    f"{', '.join(shown) or '-'} |")
        print(rows[-1], flush=True)
    return rows


def speed(before: Path, models: Path, rounds: int, only: str = "") -> list[str]:
    """The workloads of bench_freeze.py (ResNet50 checkpoint -> android), bench_convert.py
    (-> onnx and tflite) and bench_batch.py (every sample model, `freeze batch --jobs 2
    --no-cache`), our code only, before and now interleaved; medians of wall time."""
    ckpt = models / "resnet50" / "model.ckpt-200"
    if not Path(str(ckpt) + ".index").exists():
        subprocess.run([sys.executable, str(ROOT / "models" / "resnet50_ckpt.py"), "--out",
                        str(ckpt.parent), "--optimizer", "none"], check=True, capture_output=True)
    paths = [str(models / "samples" / n) for n in SAMPLES]
    work = {
        "bench_freeze: resnet50 -> android": ["--ckpt", str(ckpt), "--outputs", "probs"],
        "bench_convert: resnet50 -> onnx": ["--ckpt", str(ckpt), "--outputs", "probs",
                                            "--target", "onnx"],
        "bench_convert: resnet50 -> tflite": ["--ckpt", str(ckpt), "--outputs", "probs",
                                              "--target", "tflite"],
        "bench_batch: samples, --jobs 2": ["batch", *paths, "--outputs", "probs", "--target",
                                           "android,tflite,onnx,server", "--jobs", "2",
                                           "--no-cache"],
    }
    rows = ["| workload | before (s) | now (s) | now / before |", "|---|---|---|---|"]
    envs = {"before": environment(before), "now": environment(None)}
    for label, args in work.items():
        if only not in label:
            continue
        times: dict[str, list[float]] = {"before": [], "now": []}
        for _ in range(rounds):
            for which, env in envs.items():
                out = tempfile.mkdtemp(prefix=f"speed-{which}-")
                extra = ["--out-dir", out] if args[0] == "batch" else ["-o", out + "/"]
                start = time.monotonic()
                done = freeze(env, *args, *extra)
                times[which].append(time.monotonic() - start)
                if done.returncode:
                    print(f"{label} ({which}) failed: {done.stderr.strip()[-300:]}")
        old, new = statistics.median(times["before"]), statistics.median(times["now"])
        rows.append(f"| {label} | {old:.2f} | {new:.2f} | {new / old:.3f} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path)
    parser.add_argument("--only", choices=["identical", "speed"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workload", default="", help="only workloads whose label has this")
    parser.add_argument("--models", type=Path, default=Path(tempfile.gettempdir()) / "gf-compare")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    for script, folder in (("build_samples.py", "samples"), ("other_sources.py", "other")):
        if not (args.models / folder).exists():
            subprocess.run([sys.executable, str(ROOT / "models" / script),
                            str(args.models / folder)], check=True, capture_output=True)
    text = []
    if args.only in (None, "identical"):
        text += ["Byte-identical, before vs now (every file each run writes):", "",
                 *identical(args.before, args.models), ""]
    if args.only in (None, "speed"):
        text += [f"Our own runs of the bench workloads, {args.rounds} interleaved rounds, medians:",
                 "",
                 *speed(args.before, args.models, args.rounds, args.workload), ""]
    text.append(f"load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores")
    print("\n".join(text))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
