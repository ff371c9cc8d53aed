"""Benchmark `freeze --target onnx` and `--target tflite` against tf2onnx and TFLiteConverter.

    python bench/bench_convert.py [--cases weights-only,adam] [--repeat 3] [--markdown FILE]

Same ResNet50 checkpoints as bench_freeze.py (built once into bench/.cache). Per case:
- onnx: `python -m tf2onnx.convert --checkpoint PREFIX.meta --inputs input:0 --outputs probs:0`
  vs `freeze --ckpt PREFIX --outputs probs --target onnx` (load, freeze, convert, verify);
- tflite: `tf.compat.v1.lite.TFLiteConverter.from_frozen_graph` on freeze_graph's output (made
  once beforehand, not timed) vs `freeze --target tflite` (our load and freeze counted too).
Each tool runs as a child process `--repeat` times; medians of wall time and peak RSS (GNU time
%M). Every artifact is then run (onnxruntime / tf.lite.Interpreter) on one seeded batch and
compared with the checkpoint's own outputs (freeze_graph's .pb run in TensorFlow).
"""

from __future__ import annotations

import argparse
import collections
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import CASES, ROOT, emit, ensure_checkpoint, run_graph, timed_runs  # noqa: E402

TFLITE_PEER = """
import sys
import tensorflow as tf
conv = tf.compat.v1.lite.TFLiteConverter.from_frozen_graph(
    sys.argv[1], input_arrays=["input"], output_arrays=["probs"])
open(sys.argv[2], "wb").write(conv.convert())
"""


def tool_cmds(ours: list[str], prefix: Path, out: Path, peer_pb: Path) -> dict[tuple, list[str]]:
    return {
        ("onnx", "tf2onnx.convert"): [
            sys.executable, "-m", "tf2onnx.convert", "--checkpoint", f"{prefix}.meta",
            "--inputs", "input:0", "--outputs", "probs:0", "--output", f"{out}.tf2onnx.onnx"],
        ("onnx", "freeze --target onnx"): [
            *ours, "--ckpt", str(prefix), "--outputs", "probs", "--target", "onnx",
            "-o", f"{out}.ours.onnx", "--force"],
        ("tflite", "TFLiteConverter.from_frozen_graph"): [
            sys.executable, "-c", TFLITE_PEER, str(peer_pb), f"{out}.peer.tflite"],
        ("tflite", "freeze --target tflite"): [
            *ours, "--ckpt", str(prefix), "--outputs", "probs", "--target", "tflite",
            "-o", f"{out}.ours.tflite", "--force"],
    }


def artifact_of(cmd: list[str]) -> Path:
    if "--output" in cmd:
        return Path(cmd[cmd.index("--output") + 1])
    if "-o" in cmd:
        return Path(cmd[cmd.index("-o") + 1])
    return Path(cmd[-1])


def run_artifact(path: Path, batch):
    if path.suffix == ".onnx":
        import onnxruntime as ort

        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return session.run(["probs:0"], {"input:0": batch})[0]
    import tensorflow as tf

    interp = tf.lite.Interpreter(model_path=str(path))
    detail = interp.get_input_details()[0]
    interp.resize_tensor_input(detail["index"], batch.shape)
    interp.allocate_tensors()
    interp.set_tensor(detail["index"], batch)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


def describe(path: Path) -> dict:
    if path.suffix == ".onnx":
        import onnx

        model = onnx.load(str(path), load_external_data=False)
        ops = collections.Counter(n.op_type for n in model.graph.node)
        opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        return {"nodes": len(model.graph.node), "ops": ops, "opset": opset}
    import tensorflow as tf

    interp = tf.lite.Interpreter(model_path=str(path))
    ops = collections.Counter(d["op_name"] for d in interp._get_ops_details())  # noqa: SLF001
    return {"nodes": sum(ops.values()), "ops": ops, "opset": "-"}


def bench_case(args, case: str, workdir: Path) -> list[dict]:
    import numpy as np
    import tensorflow as tf

    prefix = ensure_checkpoint(args.cache, case)
    peer_pb = workdir / f"{case}.freeze_graph.pb"
    subprocess.run([sys.executable, "-m", "tensorflow.python.tools.freeze_graph",
                    f"--input_meta_graph={prefix}.meta", f"--input_checkpoint={prefix}",
                    "--output_node_names=probs", f"--output_graph={peer_pb}", "--input_binary"],
                   check=True, capture_output=True)
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(peer_pb.read_bytes())
    batch = np.random.default_rng(0).standard_normal((2, 224, 224, 3), dtype=np.float32)
    reference = run_graph(graph_def, batch)
    print(f"## {case}: {prefix}", file=sys.stderr)
    rows = []
    for (kind, tool), cmd in tool_cmds(args.ours_cmd, prefix, workdir / case, peer_pb).items():
        if args.only and kind not in args.only:
            continue
        row = {"case": case, "kind": kind, "tool": tool,
               **timed_runs(tool, cmd, args.repeat, workdir / f"{case}.{kind}.{len(rows)}.log")}
        if "error" not in row:
            path = artifact_of(cmd)
            got = run_artifact(path, batch)
            row.update(mb=path.stat().st_size / 2**20, diff=float(np.max(np.abs(got - reference))),
                       **describe(path))
        rows.append(row)
    return rows


def report(rows: list[dict]) -> str:
    lines = ["| case | target | tool | median wall s | median peak RSS MB | nodes | opset | MB "
             "| max abs diff vs checkpoint |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['kind']} | {r['tool']} | {r['error']} | | | | | |")
            continue
        lines.append(f"| {r['case']} | {r['kind']} | {r['tool']} | {r['wall']:.2f} | {r['rss']:.0f} "
                     f"| {r['nodes']} | {r['opset']} | {r['mb']:.1f} | {r['diff']:.2e} |")
    lines += ["", "Op types per artifact:", ""]
    for r in rows:
        if "error" not in r:
            ops = ", ".join(f"{op} {n}" for op, n in r["ops"].most_common())
            lines.append(f"- {r['case']} / {r['tool']}: {ops}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="weights-only,adam",
                        help=f"comma-separated, from: {', '.join(CASES)}")
    parser.add_argument("--only", default="", help="onnx or tflite (default: both)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ours-cmd", default=str(Path(sys.executable).parent / "freeze"))
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    args.ours_cmd = shlex.split(args.ours_cmd)
    args.only = {k for k in args.only.split(",") if k}
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            rows += bench_case(args, case, Path(tmp))
    text = report(rows)
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
