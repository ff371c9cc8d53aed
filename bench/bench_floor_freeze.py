"""Issue 25, scope 3: the android target of a checkpoint without waiting for TensorFlow, side by
side with freeze_graph and with another checkout, in interleaved rounds.

    python bench/bench_floor_freeze.py [--cases adam,weights-only,iris] [--rounds 5]
        [--against NAME=PYTHONPATH ...] [--frozen]

Each round runs, as child processes one after another: freeze_graph, then for this checkout
and each `--against` checkout `freeze` with verification and with `--no-verify` (and, with
`--frozen`, `freeze` of the frozen graph this checkout wrote that round, to android again,
verified and not; and freeze_graph's output of that round, batch norms not folded, `--no-verify`).
Reported per
tool: median wall, median CPU (user + sys, the TensorFlow child included), median peak RSS (the
largest process), and the median over rounds of wall / freeze_graph's wall in the same round
(robust to a machine whose load drifts between rounds). Checkpoints are bench_freeze.py's;
`iris` is `make demo`'s (models/iris_dnn.py: a small graph with constants to fold).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_freeze import CHILD_ENV, TIME, ensure_checkpoint  # noqa: E402


def run(cmd: list[str], env: dict, log: Path) -> tuple[float, float, float]:
    """(wall s, CPU s of the child and what it waited for, peak RSS MB)."""
    stats = log.with_suffix(".time")
    start = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.run([TIME, "-f", "%e %U %S %M", "-o", str(stats), *cmd], stdout=out,
                              stderr=subprocess.STDOUT, env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{log.read_text(errors='replace')[-2000:]}")
    _, user, system, rss = stats.read_text().split()[-4:]
    return wall, float(user) + float(system), int(rss) / 1024


def model(cache: Path, case: str) -> Path:
    """The checkpoint prefix of `case`, built on first use."""
    if case != "iris":
        return ensure_checkpoint(cache, case)
    out = cache / "iris"
    if not (out / "model.ckpt-200.index").exists():
        subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "models" /
                                            "iris_dnn.py"), "--out", str(out)],
                       env=CHILD_ENV, check=True, capture_output=True)
    return out / "model.ckpt-200"


def tools(prefix: Path, out: Path, checkouts: dict, frozen: bool) -> dict:
    """name -> (command, environment)."""
    found = {"freeze_graph": ([sys.executable, "-m", "tensorflow.python.tools.freeze_graph",
                               f"--input_meta_graph={prefix}.meta",
                               f"--input_checkpoint={prefix}", "--output_node_names=probs",
                               f"--output_graph={out}/peer.pb", "--input_binary"], CHILD_ENV)}
    for name, path in checkouts.items():
        env = {**CHILD_ENV, "PYTHONPATH": path} if path else CHILD_ENV
        cli = [sys.executable, "-m", "graphfreeze_cli.main"]
        base = [*cli, "--ckpt", str(prefix), "--outputs", "probs", "--force"]
        found[f"{name}: freeze"] = ([*base, "-o", f"{out}/{name}.pb"], env)
        found[f"{name}: freeze --no-verify"] = ([*base, "-o", f"{out}/{name}-nv.pb",
                                                 "--no-verify"], env)
        if frozen:
            found[f"{name}: freeze FROZEN.pb"] = ([*cli, f"{out}/this.pb", "--outputs", "probs",
                                                   "--force", "-o", f"{out}/{name}-f.pb"], env)
            found[f"{name}: freeze FROZEN.pb --no-verify"] = (
                [*cli, f"{out}/this.pb", "--outputs", "probs", "--force", "--no-verify", "-o",
                 f"{out}/{name}-fnv.pb"], env)
            found[f"{name}: freeze peer.pb --no-verify"] = (  # freeze_graph's: no fold yet
                [*cli, f"{out}/peer.pb", "--outputs", "probs", "--force", "--no-verify", "-o",
                 f"{out}/{name}-pnv.pb"], env)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="adam")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", action="append", default=[], metavar="NAME=PYTHONPATH")
    parser.add_argument("--frozen", action="store_true")
    parser.add_argument("--cache", type=Path, default=Path(__file__).parent / ".cache")
    args = parser.parse_args()
    checkouts = {"this": "", **dict(a.split("=", 1) for a in args.against)}
    print("| case | tool | wall s | CPU s | peak RSS MB | wall / freeze_graph's |")
    print("|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        prefix = model(args.cache, case)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            found = tools(prefix, out, checkouts, args.frozen)
            runs: dict[str, list] = {name: [] for name in found}
            for round_ in range(args.rounds):
                for name, (cmd, env) in found.items():
                    runs[name].append(run(cmd, env, out / f"{len(runs[name])}.log"))
                    print(f"  round {round_ + 1} {name}: {runs[name][-1][0]:.2f} s",
                          file=sys.stderr)
            peer = [r[0] for r in runs["freeze_graph"]]
            for name, got in runs.items():
                ratio = statistics.median(r[0] / p for r, p in zip(got, peer, strict=True))
                print(f"| {case} | {name} | {statistics.median(r[0] for r in got):.2f} | "
                      f"{statistics.median(r[1] for r in got):.2f} | "
                      f"{statistics.median(r[2] for r in got):.0f} | {ratio:.2f}x |")
    print(f"\n{os.cpu_count()} CPUs; load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
