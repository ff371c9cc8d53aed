"""How `freeze inspect` scales with a frozen graph's size (issue 25).

Builds two frozen GraphDefs with protobuf alone -- Placeholder x [1,8] -> N alternating
Neg/Identity nodes -> output, and a chain of N Relu -- writes them to a temp folder and times
`freeze inspect FILE` (a subprocess, TensorFlow import included) at each size.

    python bench/bench_inspect_scale.py [--sizes 2500,5000,10000,20000] [--kinds neg_identity,relu]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

FREEZE = os.path.join(os.path.dirname(sys.executable), "freeze")


def chain_graph(n: int, kind: str):
    """A frozen GraphDef: x [1,8] float -> n nodes (Neg/Identity alternating, or Relu) -> output."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef()
    graph.versions.producer = 1882
    x = graph.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    for d in (1, 8):
        x.attr["shape"].shape.dim.add(size=d)
    prev = "x"
    for i in range(n):
        op = ("Neg" if i % 2 == 0 else "Identity") if kind == "neg_identity" else "Relu"
        node = graph.node.add(name=f"n{i}", op=op, input=[prev])
        node.attr["T"].type = 1
        prev = node.name
    out = graph.node.add(name="output", op="Identity", input=[prev])
    out.attr["T"].type = 1
    return graph


def time_inspect(path: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([FREEZE, "inspect", path], capture_output=True, text=True,
                          cwd=os.path.dirname(path))
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"freeze inspect {path} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2500,5000,10000,20000")
    parser.add_argument("--kinds", default="neg_identity,relu")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds.split(","):
            for n in sizes:
                path = os.path.join(tmp, f"{kind}_{n}.pb")
                with open(path, "wb") as f:
                    f.write(chain_graph(n, kind).SerializeToString())
                took = time_inspect(path)
                rows.append((kind, n, took))
                print(f"{kind} {n}: {took:.2f} s", file=sys.stderr, flush=True)
    print("| graph | nodes | seconds | ms/node |")
    print("|---|---:|---:|---:|")
    for kind, n, took in rows:
        print(f"| {kind} | {n} | {took:.2f} | {1000 * took / n:.3f} |")


if __name__ == "__main__":
    main()
