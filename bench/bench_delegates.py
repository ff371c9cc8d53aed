"""Delegate coverage on the zoo (issue 26): every models/zoo.py model converted to the `tflite`
target by the real `freeze` CLI; the GPU coverage its sidecar records, beside the op count
LiteRT's own model analyzer lists for the same file (ai_edge_litert's ModelAnalyzer, run as a
user runs it: they must agree), and that analyzer's own GPU verdict. NPU: each vendor's
`npu-<vendor>:<soc>` target on MobileNetV2, ResNet50 and the transformer encoder, and LiteRT's
AOT compile of the same .tflite run directly (ai_edge_litert.aot, what the `litert` CLI calls).

    python bench/bench_delegates.py [--zoo DIR] [--only NAME,NAME] [--out bench/results_delegates.md]

Models are built into --zoo (bench/.cache/zoo by default) on first use.
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
NPU = {"qualcomm": "SM8650", "mediatek": "MT6989", "google-tensor": "Tensor_G4", "intel": "LNL"}
NPU_MODELS = ("mobilenet_v2", "resnet50", "transformer_encoder")


def sh(cmd: list[str], cwd: Path | None = None, timeout: float = 1800) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "models"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    try:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return -9, "timed out"
    return done.returncode, (done.stdout + done.stderr)


def freeze() -> str:
    return str(Path(sys.executable).parent / "freeze")


def built(zoo: Path, name: str) -> dict | None:
    if not (zoo / name / "zoo.json").exists():
        rc, out = sh([sys.executable, str(ROOT / "models" / "zoo.py"), str(zoo), "--only", name])
        if rc:
            print(f"{name}: build failed: {out.strip().splitlines()[-1:]}", flush=True)
            return None
    return json.loads((zoo / name / "zoo.json").read_text())


def analyzer(path: Path) -> tuple[int, bool]:
    """(ops listed, 'looks compatible with GPU delegate'?) by LiteRT's own analyzer."""
    from ai_edge_litert import _pywrap_analyzer_wrapper as wrapper

    text = wrapper.ModelAnalyzer(str(path), True, True)
    ops = sum(1 for line in text.splitlines() if line.lstrip().startswith("Op#"))
    return ops, "looks compatible with GPU delegate" in text


def gpu_row(zoo: Path, name: str, entry: dict) -> dict:
    folder = zoo / name
    out = folder / "bench_gpu.tflite"
    start = time.perf_counter()
    rc, text = sh([freeze(), "convert", entry["path"], *entry["args"], "--target", "tflite",
                   "--no-verify", "-o", out.name, "--force"], cwd=folder)
    seconds = time.perf_counter() - start
    if rc:
        return {"model": name, "rc": rc, "error": text.strip().splitlines()[-1][:160]}
    gpu = json.loads((folder / (out.name + ".json")).read_text())["gpu"]
    ops, compatible = analyzer(out)
    return {"model": name, "rc": 0, "line": gpu["line"], "ops": gpu["ops"],
            "gpu_ops": gpu["gpu_ops"], "analyzer_ops": ops, "analyzer_says_compatible": compatible,
            "seconds": round(seconds, 1)}


def npu_row(zoo: Path, name: str, entry: dict, vendor: str) -> dict:
    from graphfreeze.errors import GraphFreezeError
    from graphfreeze.formats.tflite import aot

    folder = zoo / name
    rc, text = sh([freeze(), "convert", entry["path"], *entry["args"], "--target",
                   f"npu-{vendor}:{NPU[vendor]}", "-o", "bench_npu.tflite", "--force"], cwd=folder)
    ours = "ok" if rc == 0 else f"exit {rc}: {text.strip().splitlines()[-1][:200]}"
    portable = folder / "bench_gpu.tflite"
    try:  # LiteRT's own AOT compile of the same file, as `litert compile` runs it
        aot.compile_model(str(portable), vendor, NPU[vendor], str(folder / "aot"), portable.name)
        direct = "compiled"
    except GraphFreezeError as err:
        direct = str(err)[:200]
    return {"model": name, "vendor": vendor, "ours": ours, "litert_aot": direct}


def report(gpu: list[dict], npu: list[dict]) -> str:
    out = ["# Delegate coverage (issue 26)", "",
           "GPU: `freeze --target tflite`'s sidecar `gpu` line (LiteRT's GPU compatibility rules, "
           "ported) beside LiteRT's own model analyzer on the same .tflite "
           "(`ModelAnalyzer(path, True, True)`): ops listed, and its GPU verdict.", "",
           "| model | gpu (ours) | ops | analyzer ops | same | analyzer says |", "|---|---|---|---|---|---|"]
    for r in gpu:
        if r["rc"]:
            out.append(f"| {r['model']} | not converted: {r['error']} | | | | |")
            continue
        same = "yes" if r["ops"] == r["analyzer_ops"] else "**no**"
        verdict = "compatible" if r["analyzer_says_compatible"] else "warnings"
        out.append(f"| {r['model']} | {r['line']} | {r['ops']} | {r['analyzer_ops']} | {same} "
                   f"| {verdict} |")
    done = [r for r in gpu if not r["rc"]]
    out += ["", f"{sum(r['ops'] == r['analyzer_ops'] for r in done)}/{len(done)} models: same op "
            "count; the analyzer said \"compatible\" for "
            f"{sum(r['analyzer_says_compatible'] for r in done)}/{len(done)}, while the rules "
            f"send ops of {sum(r['gpu_ops'] < r['ops'] for r in done)} of them back to the CPU.",
            ""]
    if npu:
        out += ["NPU: `--target npu-<vendor>:<soc>` and LiteRT's AOT compile of the same file.", "",
                "| model | vendor | ours | LiteRT AOT directly |", "|---|---|---|---|"]
        out += [f"| {r['model']} | {r['vendor']} | {r['ours']} | {r['litert_aot']} |" for r in npu]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zoo", default=str(ROOT / "bench" / ".cache" / "zoo"))
    parser.add_argument("--only", help="comma-separated model names (default: all)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results_delegates.md"))
    parser.add_argument("--no-npu", action="store_true")
    args = parser.parse_args()
    zoo = Path(args.zoo)
    zoo.mkdir(parents=True, exist_ok=True)
    listed = sh([sys.executable, str(ROOT / "models" / "zoo.py"), "--list"])[1].split()
    names = args.only.split(",") if args.only else listed
    gpu, npu = [], []
    for name in names:
        entry = built(zoo, name)
        if entry is None or "tflite" not in entry.get("targets", []):
            continue
        gpu.append(gpu_row(zoo, name, entry))
        print(json.dumps(gpu[-1]), flush=True)
        if name in NPU_MODELS and not args.no_npu and not gpu[-1]["rc"]:
            for vendor in NPU:
                npu.append(npu_row(zoo, name, entry, vendor))
                print(json.dumps(npu[-1]), flush=True)
        Path(args.out).write_text(report(gpu, npu))


if __name__ == "__main__":
    main()
