"""graphfreeze's openvino target side by side with OpenVINO's own converter (`ov.convert_model`,
what `ovc` runs) on the same original model: time and peak RSS, each run in a fresh process.

Ours is the whole `freeze ... --target openvino` (load, freeze, strip, optimize, convert, write,
and verification against the original on OpenVINO's CPU runtime); OpenVINO's is convert + save
on the original (SavedModel, Keras file, or a TF1 meta graph + checkpoint), with no verification:
as users run it (its telemetry on: usage events sent from forked processes) and with its
telemetry off (`ov-quiet`, as graphfreeze runs it).

    python bench/bench_openvino.py [--zoo DIR] [--samples DIR] [--rounds N] [--markdown FILE]
        [--against NAME=PYTHONPATH ...]

`--against`: another checkout's `freeze` (its `graphfreeze` and `graphfreeze_cli` on PYTHONPATH)
in the same rounds, with verification and with `--no-verify`.

Models: the sample CNN (TF1 checkpoint with BatchNorm, its meta graph for OpenVINO), a ResNet50
SavedModel (models/resnet50_savedmodel.py), the zoo's slim_inception (TF1: BatchNorm in a v1 `cond`) and
efficientnet_b0_export (Keras 3 `model.export`: VarHandleOp resources).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FREEZE = str(Path(sys.executable).with_name("freeze"))


def one(kind: str, model: dict, out: str, path: str = "") -> dict:
    """Run one conversion in this (fresh) process; its time and this process's peak RSS (for
    `freeze`, of its largest process: itself or its TensorFlow child)."""
    start = time.monotonic()
    error = None
    if not kind.startswith("ov"):
        cli = [sys.executable, "-m", "graphfreeze_cli.main"] if path else [FREEZE]
        args = [*cli, model["path"], "--target", "openvino", "-o", out + "/", "--force"]
        args += [*model.get("args", []), *(["--no-verify"] if "--no-verify" in kind else [])]
        env = {**os.environ, "PYTHONPATH": path} if path else None
        done = subprocess.run(args, capture_output=True, text=True, env=env)
        if done.returncode:
            error = (done.stderr.strip().splitlines() or ["?"])[-1]
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    else:
        if kind == "ov-quiet":  # its telemetry off, as graphfreeze runs it
            sys.modules["openvino_telemetry"] = None
        import openvino as ov

        try:
            converted = ov.convert_model(model["ov_input"])
            ov.save_model(converted, os.path.join(out, "model.xml"), compress_to_fp16=False)
        except Exception as err:  # noqa: BLE001 -- reported as the peer's failure
            lines = str(err).strip().splitlines()
            said = [line for line in lines if "No conversion rule" in line] or lines[-1:]
            error = f"{type(err).__name__}: {said[0].strip(' -')[:160]}"
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": time.monotonic() - start, "rss_mb": rss / 1024, "error": error}


def measure(kind: str, model: dict, path: str = "") -> dict:
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run([sys.executable, __file__, "--one", kind, json.dumps(model), out,
                               path], capture_output=True, text=True)
    if done.returncode:
        return {"seconds": 0.0, "rss_mb": 0.0, "error": done.stderr.strip()[-200:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def models(zoo: Path, samples: Path, resnet50: str) -> list[dict]:
    found = []
    ckpt = samples / "cnn_v2" / "model.ckpt-200"
    if Path(str(ckpt) + ".index").exists():
        found.append({"name": "sample cnn_v2 (TF1 checkpoint; OpenVINO given its .meta)",
                      "path": str(ckpt), "args": ["--outputs", "probs"],
                      "ov_input": str(ckpt) + ".meta"})
    resnet = Path(resnet50) / "saved_model.pb"
    if resnet.exists():
        found.append({"name": "ResNet50 SavedModel (224x224)", "path": str(resnet.parent),
                      "args": [], "ov_input": str(resnet.parent)})
    for name in ("slim_inception", "efficientnet_b0_export"):
        spec = zoo / name / "zoo.json"
        if not spec.exists():
            continue
        entry = json.loads(spec.read_text())
        path = str(zoo / name / entry["path"])
        original = path + ".meta" if Path(path + ".index").exists() else path
        found.append({"name": name, "path": path, "args": entry.get("args", []),
                      "ov_input": original})
    return found


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo", default="/tmp/zoo")
    parser.add_argument("--samples", default="/tmp/ovs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--resnet50", default="/tmp/r50sm",
                        help="a SavedModel from models/resnet50_savedmodel.py --out DIR")
    parser.add_argument("--markdown")
    parser.add_argument("--against", action="append", default=[], metavar="NAME=PYTHONPATH")
    args = parser.parse_args()
    checkouts = dict(a.split("=", 1) for a in args.against)
    rows = ["| model | ours (s, verified) | ours --no-verify (s) | ours peak RSS (MB) | "
            "ov.convert_model (s) | its peak RSS (MB) | ours / ov | telemetry off: ov (s) | "
            "ours / ov | note |", "|---|---|---|---|---|---|---|---|---|---|"]
    for model in models(Path(args.zoo), Path(args.samples), args.resnet50):
        runs = {"ours": [], "ours --no-verify": [], "ov": [], "ov-quiet": []}
        runs.update({f"{name}{flag}": [] for name in checkouts for flag in ("", " --no-verify")})
        for _ in range(args.rounds):  # interleaved, so load changes hit every tool alike
            for kind in runs:
                runs[kind].append(measure(kind, model, checkouts.get(kind.split(" ")[0], "")))
        ours, peer = runs["ours"], runs["ov"]
        t_fast = statistics.median(r["seconds"] for r in runs["ours --no-verify"])
        t_ours = statistics.median(r["seconds"] for r in ours)
        t_peer = statistics.median(r["seconds"] for r in peer)
        t_quiet = statistics.median(r["seconds"] for r in runs["ov-quiet"])
        note = "; ".join(f"{k} failed: {r['error']}" for k, rs in runs.items()
                         for r in rs[:1] if r["error"])

        def over(mine: float, kind: str, runs=runs) -> str:  # a failed side: no ratio
            if runs[kind][0]["error"] or runs["ours"][0]["error"]:
                return "-"
            t = statistics.median(r["seconds"] for r in runs[kind])
            return f"{mine / t:.2f}x" if t else "-"

        ratio, quiet = over(t_ours, "ov"), over(t_ours, "ov-quiet")
        rows.append(f"| {model['name']} | {t_ours:.1f} | {t_fast:.1f} | "
                    f"{max(r['rss_mb'] for r in ours):.0f} | "
                    f"{t_peer:.1f} | {max(r['rss_mb'] for r in peer):.0f} | {ratio} | "
                    f"{t_quiet:.1f} | {quiet} | {note} |")
        print(rows[-1], flush=True)
        for name in checkouts:
            mine = [statistics.median(r["seconds"] for r in runs[f"{name}{flag}"])
                    for flag in ("", " --no-verify")]
            rows.append(f"| {model['name']}, {name} | {mine[0]:.1f} | {mine[1]:.1f} | "
                        f"{max(r['rss_mb'] for r in runs[name]):.0f} | | | "
                        f"{over(mine[0], 'ov')} | | {over(mine[0], 'ov-quiet')} | |")
            print(rows[-1], flush=True)
    text = "\n".join(rows) + f"\n\n{args.rounds} rounds, medians; load average " \
        f"{os.getloadavg()[0]:.1f} at the end; {os.cpu_count()} cores.\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
