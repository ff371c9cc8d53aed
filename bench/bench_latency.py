"""`freeze --benchmark`: what it costs, and whether its numbers agree with each runtime's own
benchmark tool on the same artifact and thread count.

    python bench/bench_latency.py [--samples DIR] [--resnet DIR] [--rounds N] [--threads N]
                                  [--runs N] [--models cnn,resnet50]

1. Cost: `freeze MODEL --target T1,..,Tn` with and without `--benchmark` (defaults: 50 runs after
   5 warm-up, 1 thread), each a fresh process, interleaved `--rounds` times; the extra wall time
   over the n artifacts, per artifact (medians).
2. Agreement: the median in the sidecar (`latency.median_ms`, measured inside `freeze` at
   `--threads`) against, in a fresh process on the same file and thread count:
   - .tflite: LiteRT's own Python benchmark tool, `ai_edge_litert.tools.benchmark_litert_model`
     (the `litert-benchmark` script the ai-edge-litert wheel installs; its CompiledModel API on
     the CPU accelerator, XNNPack), `--num_runs/--warmup_runs/--num_threads`, its median;
   - .onnx: `onnxruntime.tools.onnxruntime_test` (the perf utility the onnxruntime wheel ships;
     `onnxruntime_perf_test` is not in it) reports only an average, at onnxruntime's default
     threads (one per physical core), so the comparison is its timing loop as
     `onnxruntime_perf_test` runs it: `InferenceSession.run(None, feeds, RunOptions())` timed
     per run at `intra_op_num_threads`, median; `onnxruntime_test`'s average is listed too;
   - OpenVINO IR: `benchmark_app -d CPU -hint none -nstreams 1 -api sync -nireq 1 -nthreads N
     -data_shape NAME[1,..]` (its UI takes -nthreads only without a hint), its median;
   - frozen .pb: TensorFlow's `tf.test.Benchmark.run_op_benchmark` on a session with the same
     thread config (grappler on), its median;
   - SavedModel: no TensorFlow tool in the wheel times a SavedModel, so not compared.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FREEZE = str(BIN / "freeze")
TARGETS = ["android", "server", "tflite", "onnx"] + \
    (["openvino"] if importlib.util.find_spec("openvino") else [])
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def build(samples: str | None, resnet: str | None, work: Path, names: list[str]) -> dict:
    models = {}
    if "cnn" in names:
        if not samples:
            samples = str(work / "samples")
            subprocess.run([sys.executable, str(ROOT / "models/build_samples.py"), samples],
                           check=True, capture_output=True)
        models["cnn"] = [f"{samples}/cnn_v2", "--outputs", "probs"]
    if "resnet50" in names:
        if not resnet:
            resnet = str(work / "resnet50")
            subprocess.run([sys.executable, str(ROOT / "models/resnet50_savedmodel.py"),
                            "--out", resnet], check=True, capture_output=True, env=ENV)
        models["resnet50"] = [resnet]
    return models


def freeze(args: list[str], out: Path, extra: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run([FREEZE, *args, "--target", ",".join(TARGETS), "-o", f"{out}/",
                           "--force", *extra], capture_output=True, text=True, env=ENV)
    if done.returncode:
        raise SystemExit(f"freeze failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - start


def sidecars(out: Path) -> dict:
    found = {}
    for path in sorted(out.glob("*.json")):
        car = json.loads(path.read_text())
        if "latency" in car:
            found[car["target"]] = (out / car["file"], car["latency"])
    return found


def run_py(code: str, *args) -> str:
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, env=ENV)
    if done.returncode:
        raise RuntimeError(done.stderr[-1500:])
    return done.stdout.strip().splitlines()[-1].split()[-1]


ORT_LOOP = """
import sys, time, statistics, numpy as np, onnxruntime as ort
path, threads, runs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(1)
feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape])
         .astype(np.float32) for i in s.get_inputs()}
r = ort.RunOptions()
for _ in range(warmup): s.run(None, feeds, r)
t = []
for _ in range(runs):
    a = time.perf_counter(); s.run(None, feeds, r); t.append((time.perf_counter() - a) * 1e3)
print(statistics.median(t))
"""

TF_BENCH = """
import sys, os, json
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf
path, cars = sys.argv[1], sys.argv[5]
threads, runs, warmup = (int(x) for x in sys.argv[2:5])
car = json.load(open(cars))
gd = tf.compat.v1.GraphDef(); gd.ParseFromString(open(path, "rb").read())
g = tf.Graph()
with g.as_default(): tf.graph_util.import_graph_def(gd, name="")
cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                             inter_op_parallelism_threads=1, use_per_session_threads=True)
sess = tf.compat.v1.Session(graph=g, config=cfg)
rng = np.random.default_rng(1)
feed = {i["name"]: rng.standard_normal([1 if d is None else d for d in i["shape"]]).astype(i["dtype"])
        for i in car["inputs"]}
fetch = [o["name"] for o in car["outputs"]]
r = tf.test.Benchmark().run_op_benchmark(sess, fetch, feed_dict=feed, burn_iters=warmup, min_iters=runs)
print("MS", r["wall_time"] * 1e3)
"""


def peers(target: str, path: Path, threads: int, runs: int, warmup: int) -> list[tuple]:
    """[(tool, median or average ms)] on `path`, each in a fresh process."""
    if target.startswith("tflite") or target.startswith("edge"):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run([sys.executable, "-m", "ai_edge_litert.tools.benchmark_litert_model",
                            f"--model={path}", f"--num_runs={runs}", f"--warmup_runs={warmup}",
                            f"--num_threads={threads}", f"--result_json={f.name}"],
                           check=True, capture_output=True, env=ENV)
            return [("benchmark_litert_model (median)",
                     json.load(open(f.name))["latency"]["median_ms"])]
    if target.startswith("onnx"):
        out = subprocess.run([sys.executable, "-m", "onnxruntime.tools.onnxruntime_test",
                              str(path), str(runs)], capture_output=True, text=True, env=ENV)
        avg = float(re.search(r"avg latency: ([\d.e+-]+)", out.stdout).group(1))
        return [("InferenceSession.run loop as onnxruntime_perf_test (median)",
                 float(run_py(ORT_LOOP, path, threads, runs, warmup))),
                ("onnxruntime_test (average, default threads)", avg)]
    if target == "openvino":
        car = json.loads(Path(f"{path}.json").read_text())
        shapes = ",".join(i["name"] + str([1 if d is None else d for d in i["shape"]])
                          for i in car["inputs"]).replace(" ", "")
        out = subprocess.run([str(BIN / "benchmark_app"), "-m", str(path), "-d", "CPU", "-hint",
                              "none", "-nstreams", "1", "-api", "sync", "-nireq", "1",
                              "-nthreads", str(threads), "-niter", str(runs), "-data_shape",
                              shapes], capture_output=True, text=True)
        value, unit = re.search(r"Median:\s+([\d.]+) (us|ms)", out.stdout).groups()
        return [("benchmark_app -api sync (median)", float(value) / (1e3 if unit == "us" else 1))]
    if target == "android":
        return [("tf.test.Benchmark.run_op_benchmark (median)",
                 float(run_py(TF_BENCH, path, threads, runs, warmup, f"{path}.json")))]
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples")
    parser.add_argument("--resnet")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--models", default="cnn,resnet50")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        models = build(args.samples, args.resnet, work, args.models.split(","))
        print(f"targets: {','.join(TARGETS)}; threads {args.threads}; runs {args.runs}")
        print("| model | freeze (s) | freeze --benchmark (s) | extra per artifact (s) |")
        print("|---|---|---|---|")
        measured = {}
        for name, model in models.items():
            plain, timed = [], []
            for k in range(args.rounds):
                plain.append(freeze(model, work / f"{name}-plain", []))
                timed.append(freeze(model, work / f"{name}-timed-{k}", ["--benchmark"]))
            a, b = statistics.median(plain), statistics.median(timed)
            print(f"| {name} | {a:.2f} | {b:.2f} | {(b - a) / len(TARGETS):.3f} |", flush=True)
            out = work / f"{name}-threads"
            freeze(model, out, ["--benchmark", "--benchmark-threads", str(args.threads),
                                "--benchmark-runs", str(args.runs)])
            measured[name] = sidecars(out)
        print("\n| model | target | runtime | --benchmark median (ms) | p90 (ms) | tool | tool "
              "(ms) | ours / tool |")
        print("|---|---|---|---|---|---|---|---|")
        for name, found in measured.items():
            for target, (path, lat) in found.items():
                rows = peers(target, path, args.threads, args.runs, lat["warmup"]) or \
                    [("(no tool)", None)]
                for tool, ms in rows:
                    ratio = f"{lat['median_ms'] / ms:.3f}" if ms else "-"
                    print(f"| {name} | {target} | {lat['runtime']} | {lat['median_ms']:.4g} | "
                          f"{lat['p90_ms']:.4g} | {tool} | "
                          f"{'-' if ms is None else f'{ms:.4g}'} | {ratio} |", flush=True)
        print(f"\ncpu: {next(iter(next(iter(measured.values())).values()))[1]['cpu']}")


if __name__ == "__main__":
    main()
