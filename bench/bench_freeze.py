"""Benchmark `freeze` against TensorFlow's freeze_graph on ResNet50 checkpoints.

    python bench/bench_freeze.py [--cases weights-only,adam,adam-cf-v1] [--repeat 3]
        [--ours-cmd "freeze"] [--only-peer] [--cache bench/.cache] [--markdown FILE]

For each case the checkpoint is built once into the cache dir (models/resnet50_ckpt.py), then
each tool freezes it `--repeat` times as a child process; wall time and peak RSS (GNU
/usr/bin/time's %M for that child) are reported as medians. The frozen graphs are inspected
(node count, If/Switch/Merge, op histogram) and run on the same seeded batch to compare `probs:0`.
Also times `freeze --help` and `freeze targets` (median of 5; budget 0.5 s).
"""

from __future__ import annotations

import argparse
import collections
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {  # name -> models/resnet50_ckpt.py flags
    "weights-only": ["--optimizer", "none", "--control-flow", "v2"],
    "adam": ["--optimizer", "adam", "--control-flow", "v2"],
    "adam-cf-v1": ["--optimizer", "adam", "--control-flow", "v1"],
}
PREFIX = "model.ckpt-200"
CLI_BUDGET_S = 0.5
TIME = "/usr/bin/time"  # GNU time (Debian package `time`)
# children run as installed: with their bytecode cached (a PYTHONDONTWRITEBYTECODE shell would
# compile every module from source on every run, ~0.1 s of a 0.6 s inspect)
CHILD_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
             "TF_CPP_MIN_LOG_LEVEL": "3"}


def emit(text: str, markdown: Path | None) -> None:
    """Print a results table, and write it to --markdown's file when given."""
    print(text)
    if markdown:
        markdown.write_text(text)


def run_child(cmd: list[str], log: Path) -> tuple[int, float, float]:
    """Run cmd; return (returncode, wall seconds, peak RSS in MB) for that child alone."""
    # Through /usr/bin/time: a child forked straight from this (large, TensorFlow-loaded) process
    # inherits its high-water RSS across exec, so os.wait4's ru_maxrss would report ours.
    rss_file = log.with_suffix(".rss")
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.run([TIME, "-f", "%M", "-o", str(rss_file), *cmd], stdout=out,
                              stderr=subprocess.STDOUT, env=CHILD_ENV, check=False)
        wall = time.perf_counter() - start
    rss_kib = int(rss_file.read_text().strip().splitlines()[-1])
    return proc.returncode, wall, rss_kib / 1024


def timed_runs(tool: str, cmd: list[str], repeat: int, log: Path) -> dict:
    """Run cmd `repeat` times: {"wall", "rss"} medians, or {"error"} at the first failure."""
    walls, rsss = [], []
    for i in range(repeat):
        rc, wall, rss = run_child(cmd, log)
        print(f"  {tool} run {i + 1}: {wall:.2f} s, {rss:.0f} MB, rc {rc}", file=sys.stderr)
        if rc != 0:
            print(f"  {shlex.join(cmd)}\n{tail(log)}", file=sys.stderr)
            return {"error": f"FAILED (rc {rc})"}
        walls.append(wall)
        rsss.append(rss)
    return {"wall": statistics.median(walls), "rss": statistics.median(rsss)}


def tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def ensure_checkpoint(cache: Path, case: str) -> Path:
    out = cache / case
    if not (out / f"{PREFIX}.index").exists():
        cmd = [sys.executable, str(ROOT / "models" / "resnet50_ckpt.py"), "--out", str(out),
               *CASES[case]]
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "build.log"
            rc, wall, rss = run_child(cmd, log)
            if rc != 0:
                sys.exit(f"building {case} failed (rc {rc}):\n{tail(log)}")
        print(f"built {case} in {wall:.1f} s (peak RSS {rss:.0f} MB)", file=sys.stderr)
    return out / PREFIX


def tool_cmds(args, prefix: Path, out_pb: Path) -> dict[str, list[str]]:
    cmds = {"freeze_graph": [
        sys.executable, "-m", "tensorflow.python.tools.freeze_graph",
        f"--input_meta_graph={prefix}.meta", f"--input_checkpoint={prefix}",
        "--output_node_names=probs", f"--output_graph={out_pb}.freeze_graph.pb", "--input_binary"]}
    if not args.only_peer:
        cmds["freeze (verify on)"] = [*args.ours_cmd, "--ckpt", str(prefix), "--outputs", "probs",
                                      "-o", f"{out_pb}.ours.pb", "--force"]
        cmds["freeze --no-verify"] = [*args.ours_cmd, "--ckpt", str(prefix), "--outputs", "probs",
                                      "-o", f"{out_pb}.ours-nv.pb", "--force", "--no-verify"]
    return cmds


def graph_stats(pb: Path) -> dict:
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(pb.read_bytes())
    ops = collections.Counter(node.op for node in graph_def.node)
    fn_ops = collections.Counter(n.op for f in graph_def.library.function for n in f.node_def)
    return {"graph_def": graph_def, "nodes": len(graph_def.node), "ops": ops,
            "functions": len(graph_def.library.function), "fn_nodes": sum(fn_ops.values()),
            "if": ops["If"] + ops["StatelessIf"], "switch": ops["Switch"], "merge": ops["Merge"],
            "mb": pb.stat().st_size / 2**20}


def run_graph(graph_def, batch):
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            return sess.run("probs:0", {"input:0": batch})


def bench_case(args, case: str, workdir: Path) -> list[dict]:
    import numpy as np

    prefix = ensure_checkpoint(args.cache, case)
    ckpt_mb = sum(p.stat().st_size for p in prefix.parent.glob(PREFIX + ".*")) / 2**20
    print(f"## {case}: {prefix} ({ckpt_mb:.0f} MB)", file=sys.stderr)
    rows = []
    for tool, cmd in tool_cmds(args, prefix, workdir / case).items():
        row = {"case": case, "tool": tool, "ckpt_mb": ckpt_mb,
               **timed_runs(tool, cmd, args.repeat, workdir / f"{case}.{tool}.log")}
        if "error" not in row:
            row.update(graph_stats(Path(cmd_output(cmd))))
        rows.append(row)
    batch = np.random.default_rng(0).standard_normal((2, 224, 224, 3), dtype=np.float32)
    outputs = {r["tool"]: run_graph(r["graph_def"], batch) for r in rows if "error" not in r}
    for row in rows:
        if row["tool"] in outputs and "freeze_graph" in outputs:
            diff = np.max(np.abs(outputs[row["tool"]] - outputs["freeze_graph"]))
            row["diff"] = "ref" if row["tool"] == "freeze_graph" else f"{diff:.2e}"
    return rows


def cmd_output(cmd: list[str]) -> str:
    for arg in cmd:
        if arg.startswith("--output_graph="):
            return arg.split("=", 1)[1]
    return cmd[cmd.index("-o") + 1]


def cli_timings(args) -> list[str]:
    lines = ["| command | median s (of 5) | under 0.5 s |", "|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for sub in (["--help"], ["targets"]):
            walls, rc = [], 0
            for _ in range(5):
                rc, wall, _ = run_child([*args.ours_cmd, *sub], Path(tmp) / "cli.log")
                walls.append(wall)
            med = statistics.median(walls)
            ok = "yes" if med < CLI_BUDGET_S and rc == 0 else f"NO (rc {rc})" if rc else "NO"
            lines.append(f"| `{shlex.join([Path(args.ours_cmd[-1]).name, *sub])}` "
                         f"| {med:.3f} | {ok} |")
    return lines


def report(rows: list[dict], cli_lines: list[str]) -> str:
    lines = ["| case | tool | median wall s | median peak RSS MB | nodes | If/Switch/Merge "
             "| functions | .pb MB | max abs diff |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['tool']} | {r['error']} | | | | | | |")
            continue
        lines.append(f"| {r['case']} | {r['tool']} | {r['wall']:.2f} | {r['rss']:.0f} "
                     f"| {r['nodes']} | {r['if']}/{r['switch']}/{r['merge']} "
                     f"| {r['functions']} ({r['fn_nodes']} nodes) | {r['mb']:.1f} "
                     f"| {r.get('diff', '-')} |")
    lines += ["", "Top op types per frozen graph (main graph, not function bodies):", ""]
    for r in rows:
        if "error" not in r:
            top = ", ".join(f"{op} {n}" for op, n in r["ops"].most_common(8))
            lines.append(f"- {r['case']} / {r['tool']}: {top}")
    if cli_lines:
        lines += ["", *cli_lines]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, from: {', '.join(CASES)}")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ours-cmd", default=str(Path(sys.executable).parent / "freeze"),
                        help="command for our tool (shell-split); default: freeze beside python")
    parser.add_argument("--only-peer", action="store_true", help="run freeze_graph only")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    args.ours_cmd = shlex.split(args.ours_cmd)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    if not args.only_peer and not Path(args.ours_cmd[0]).exists() and \
            not any((Path(d) / args.ours_cmd[0]).exists() for d in os.environ["PATH"].split(":")):
        parser.error(f"{args.ours_cmd[0]} not found; install the project or pass --ours-cmd "
                     "(or --only-peer)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_freeze.") as workdir:
        for case in cases:
            rows += bench_case(args, case, Path(workdir))
    text = report(rows, [] if args.only_peer else cli_timings(args))
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
