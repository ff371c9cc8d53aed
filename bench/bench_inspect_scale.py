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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from chains import chain_graph  # noqa: E402 -- models/chains.py

FREEZE = os.path.join(os.path.dirname(sys.executable), "freeze")


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
