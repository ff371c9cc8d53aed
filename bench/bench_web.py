"""Issue 45: the web targets' verification time on MobileNetV2 (models/zoo.py's, 96x96, seeded,
no weights downloaded) next to the same model's in Python: web-onnx (onnxruntime-web, wasm, in
headless Chromium) against onnx (onnxruntime's Python API), web-litert (LiteRT.js, wasm, in
headless Chromium) against tflite (LiteRT's Python interpreter).

Timed three ways:
  verify stage  the verify stage of `freeze --target T` (in this process, one target a run, its
                seeded inputs): for web, Chromium was started while the artifact was written
                (export_web's prepare). Median of --runs.
One `freeze` run converts the model to the four targets with --save-golden; then each artifact is
verified against those golden inputs and outputs:
  verify_file   graphfreeze's `freeze verify` work in this process (TensorFlow already imported):
                open the session (web: start Chromium, load the runtime's wasm and the model),
                run the golden inputs, judge. Median of --runs.
  freeze verify the command as a user runs it (its own process: TensorFlow's import included).

    python bench/bench_web.py [--zoo DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_delegates import built, freeze, sh  # noqa: E402

PAIRS = (("onnx", "web-onnx", ".onnx"), ("tflite", "web-litert", ".tflite"))


def converted(zoo: Path) -> tuple[Path, dict]:
    entry = built(zoo, "mobilenet_v2")
    if entry is None:
        sys.exit("mobilenet_v2 did not build")
    folder = zoo / "mobilenet_v2"
    out = folder / "web_bench"
    targets = ",".join(t for pair in PAIRS for t in pair[:2])
    start = time.perf_counter()
    rc, text = sh([freeze(), "convert", entry["path"], *entry["args"], "--target", targets,
                   "-o", "web_bench/", "--save-golden", "web_bench/golden", "--force"], cwd=folder)
    if rc:
        sys.exit(text)
    print(f"converted to {targets} in {time.perf_counter() - start:.1f} s", flush=True)
    return out, entry


def artifact(out: Path, target: str, suffix: str) -> Path:
    return next(p for p in out.glob(f"*{suffix}") if json.loads(
        Path(f"{p}.json").read_text())["target"] == target)


def in_process(path: Path, golden: Path, runs: int) -> list[float]:
    from graphfreeze.registry import Registry
    from graphfreeze.stages.verify.verify_file import verify_file

    registry = Registry.default()
    verify_file(str(path), str(golden), registry, {})  # warm: imports, the runtime's caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        report = verify_file(str(path), str(golden), registry, {})
        times.append(time.perf_counter() - start)
        assert report["passed"], report
    return times


def verify_stage(folder: Path, entry: dict, target: str, runs: int) -> float:
    """The median seconds of the verify stage in `freeze --target TARGET` (in this process,
    one target a run): from its start to the next stage's, or the run's end."""
    from graphfreeze.convert import Request, execute, prepare

    times = []
    for _ in range(runs + 1):  # the first warms the imports
        marks: list[tuple[str, float]] = []
        request = Request(source=str(folder / entry["path"]), targets=(target,),
                          output=str(folder / "web_bench" / "stage") + "/", force=True)
        execute(prepare(request), on_stage=lambda t, stage, marks=marks: marks.append(
            (stage, time.perf_counter())))
        marks.append(("end", time.perf_counter()))
        at = next(i for i, (stage, _) in enumerate(marks) if stage == "verify")
        times.append(marks[at + 1][1] - marks[at][1])
    return statistics.median(times[1:])


def command(path: Path, golden: Path) -> float:
    start = time.perf_counter()
    subprocess.run([freeze(), "verify", str(path), "--golden", str(golden)], check=True,
                   capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo", type=Path, default=ROOT / "bench" / ".cache" / "zoo")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from graphfreeze.process.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()
    out, entry = converted(args.zoo)
    golden = out / "golden"
    rows = []
    for python_target, web_target, suffix in PAIRS:
        timed = {}
        for target in (python_target, web_target):
            path = artifact(out, target, suffix)
            times = in_process(path, golden, args.runs)
            car = json.loads(Path(f"{path}.json").read_text())
            timed[target] = (verify_stage(out.parent, entry, target, args.runs),
                             statistics.median(times), command(path, golden),
                             car.get("web", {}))
        py, web = timed[python_target], timed[web_target]
        facts = web[3]
        rows.append(f"| {web_target} vs {python_target} | "
                    + " | ".join(f"{p:.2f} s | {w:.2f} s | {w / p:.1f}x"
                                 for p, w in zip(py[:3], web[:3], strict=True))
                    + f" | {facts.get('package')} {facts.get('version')}, {facts.get('browser')} |")
    print("| pair | verify stage, Python | browser | ratio | freeze verify's work, Python | "
          "browser | ratio | freeze verify command, Python | browser | ratio | browser runtime |")
    print("| --- |" + " ---: |" * 9 + " --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
