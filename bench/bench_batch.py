"""Benchmark `freeze batch` against shell loops of freeze_graph and of single `freeze` runs.

    python bench/bench_batch.py [--repeat 3] [--jobs 2] [--copies 100] [--no-leak-check]
        [--models bench/.cache/batch] [--markdown FILE]

On the 24 models of models/batch_models.py (built once into --models; 8 checkpoints, 6 model_dirs,
5 SavedModels, 5 Keras files), android target, one run, as child processes (bench_freeze.py's
run_child: wall time, GNU /usr/bin/time %M):

  timing     a bash loop of `python -m tensorflow.python.tools.freeze_graph` over the 14 it takes
             (checkpoints and model_dirs), bash loops of single `freeze` runs over the same 14 and
             over the other 10, and `freeze batch --jobs J --no-cache` over the 14 and over all
             24 (also --jobs 1); medians of --repeat, the order rotated each round
  cache      the 24 again with a cache: once to fill it, then --repeat re-runs with nothing
             changed (wall; whether TensorFlow was imported: a wrapper printing
             `'tensorflow' in sys.modules` at exit, and -X importtime)
  baseline   (in the cache part) the cached re-run again with `--baseline` (its own report.json,
             3 models' sizes edited 1 % down so there are changes to report) and two `--fail-on`
             budgets: the diff, report.md beside the other reports (issue 17; < 1.5 s)
  changed    one checkpoint retrained with another seed (models/batch_models.py --only), re-run
  memory     --copies jobs converting the small CNN (symlinks to one model_dir, distinct names) to
             tflite through one `--jobs 1` batch: every worker's VmHWM (/proc/PID/status of the
             multiprocessing spawn children, sampled every 20 ms) against a single
             `freeze --target tflite` run's peak RSS (/usr/bin/time %M); and, unless
             --no-leak-check, the same jobs through graphfreeze.batch.run(recycle_after=copies)
             (one worker, never recycled) to show what recycling holds back
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))
from batch_models import MODELS, manifest  # noqa: E402
from bench_freeze import CHILD_ENV, ROOT, TIME, emit, run_child, tail  # noqa: E402

PY = sys.executable
OURS = [str(Path(sys.executable).parent / "freeze")]  # or [python, -m, ...] with --snapshot
CHANGED = "iris_ref"  # the model retrained for the "changed" case
CNN = "cnn_v2"  # the small CNN of the memory case (its folder is a model_dir)
TARGETS = {"freeze_graph": 0.25, "freeze": 0.4, "cached_s": 1.0, "rss": 1.5, "baseline_s": 1.5}


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def use_snapshot(rev: str, folder: Path) -> None:
    """graphfreeze (converters/) and graphfreeze_cli (cli/) as committed at `rev`, first on the
    children's PYTHONPATH (ahead of the editable install's finder), run as `python -m`."""
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "converters", "cli"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "converters").rename(folder / "graphfreeze")
    (folder / "cli").rename(folder / "graphfreeze_cli")
    CHILD_ENV["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(folder), CHILD_ENV.get("PYTHONPATH")) if p)
    OURS[:] = [PY, "-m", "graphfreeze_cli.main"]
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True,
                            capture_output=True, text=True).stdout.strip()
    print(f"graphfreeze as committed at {rev} ({commit}), from {folder}", file=sys.stderr)
    SNAPSHOT.append(commit)


SNAPSHOT: list[str] = []


# -- models and manifests -----------------------------------------------------------------------

def ensure_models(folder: Path) -> None:
    if (folder / "models.toml").exists() and all(_exists(folder / m.source) for m in MODELS):
        return
    print(f"building the 24 models into {folder} ...", file=sys.stderr)
    folder.mkdir(parents=True, exist_ok=True)
    rc, wall, rss = run_child([PY, str(ROOT / "models" / "batch_models.py"), str(folder)],
                              folder / "build.log")
    if rc != 0:
        sys.exit(f"building the models failed (rc {rc}):\n{tail(folder / 'build.log')}")
    print(f"built in {wall:.1f} s (peak RSS {rss:.0f} MB)", file=sys.stderr)


def _exists(path: Path) -> bool:
    return path.exists() or Path(str(path) + ".index").exists()


def write_manifest(path: Path, models, root: Path, out_dir: Path, targets=("android",)) -> Path:
    absolute = [dataclasses.replace(m, source=str(root / m.source)) for m in models]
    path.write_text(manifest(absolute, str(out_dir), targets))
    return path


def prefix_of(root: Path, model) -> Path:
    """The checkpoint prefix freeze_graph is given: the prefix, or the latest in a model_dir."""
    if model.kind == "checkpoint":
        return root / model.source
    state = (root / model.source / "checkpoint").read_text()
    name = re.search(r'^model_checkpoint_path:\s*"([^"]+)"', state, re.M).group(1)
    return root / model.source / Path(name).name


def loop_cmd(lines: list[list[str]]) -> list[str]:
    """One bash child running each command in turn (stops at the first failure)."""
    import shlex

    return ["bash", "-c", "set -e\n" + "\n".join(shlex.join(c) + " >/dev/null" for c in lines)]


def summary(log: Path) -> dict:
    """Counts from `freeze batch`'s summary line: {"ok", "cached", "failed", "seconds"}."""
    match = re.search(r"(\d+) ok, (\d+) cached, (\d+) failed in ([\d.]+) s",
                      log.read_text(errors="replace"))
    if not match:
        return {}
    ok, cached, failed, seconds = match.groups()
    return {"ok": int(ok), "cached": int(cached), "failed": int(failed), "seconds": float(seconds)}


# -- timing ---------------------------------------------------------------------------------------

def timing(args, root: Path, work: Path) -> dict:
    ckpts = [m for m in MODELS if m.freeze_graph_able]
    others = [m for m in MODELS if not m.freeze_graph_able]
    out = work / "timing"
    out.mkdir()
    m14 = write_manifest(work / "ckpt14.toml", ckpts, root, out / "batch14")
    m24 = write_manifest(work / "all24.toml", MODELS, root, out / "batch24")
    m24j1 = write_manifest(work / "all24-j1.toml", MODELS, root, out / "batch24j1")
    fg = []
    for m in ckpts:
        prefix = prefix_of(root, m)
        fg.append([PY, "-m", "tensorflow.python.tools.freeze_graph",
                   f"--input_meta_graph={prefix}.meta", f"--input_checkpoint={prefix}",
                   "--output_node_names=probs", f"--output_graph={out / m.name}.fg.pb",
                   "--input_binary"])

    def freeze_one(m) -> list[str]:
        outputs = ["--outputs", ",".join(m.outputs)] if m.outputs else []
        return [*OURS, str(root / m.source), *outputs, "-o", f"{out / m.name}.freeze.pb",
                "--force"]

    cases = {
        "freeze_graph loop (14)": loop_cmd(fg),
        "freeze loop (14)": loop_cmd([freeze_one(m) for m in ckpts]),
        "freeze loop (other 10)": loop_cmd([freeze_one(m) for m in others]),
        f"batch --jobs {args.jobs} (14)": [*OURS, "batch", str(m14), "--jobs", str(args.jobs),
                                           "--no-cache"],
        f"batch --jobs {args.jobs} (24)": [*OURS, "batch", str(m24), "--jobs", str(args.jobs),
                                           "--no-cache"],
        "batch --jobs 1 (24)": [*OURS, "batch", str(m24j1), "--jobs", "1", "--no-cache"],
    }
    walls = {name: [] for name in cases}
    rsss = {name: [] for name in cases}
    loads = []
    names = list(cases)
    for i in range(args.repeat):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            log = work / "timing.log"
            rc, wall, rss = run_child(cases[name], log)
            print(f"  {name} run {i + 1}: {wall:.2f} s, {rss:.0f} MB, rc {rc}, load {load()}",
                  file=sys.stderr)
            if rc != 0:
                sys.exit(f"{name} failed (rc {rc}):\n{tail(log)}")
            if name.startswith("batch") and summary(log).get("ok") != (
                    14 if "(14)" in name else 24):
                sys.exit(f"{name}: not every job ok:\n{tail(log)}")
            walls[name].append(wall)
            rsss[name].append(rss)
            loads.append(os.getloadavg()[0])
    result = {name: {"wall": statistics.median(walls[name]), "rss": statistics.median(rsss[name]),
                     "runs": walls[name]} for name in cases}
    loop24 = [a + b for a, b in zip(walls["freeze loop (14)"], walls["freeze loop (other 10)"],
                                    strict=True)]
    result["freeze loop (24)"] = {"wall": statistics.median(loop24), "runs": loop24,
                                  "rss": max(result["freeze loop (14)"]["rss"],
                                             result["freeze loop (other 10)"]["rss"])}
    result["_load"] = (min(loads), max(loads))
    return result


# -- cache ----------------------------------------------------------------------------------------

WRAPPER = ("import atexit, sys\n"
           "atexit.register(lambda: print('TENSORFLOW_IMPORTED', 'tensorflow' in sys.modules,"
           " file=sys.stderr))\n"
           "sys.argv = ['freeze', *sys.argv[1:]]\n"
           "from graphfreeze_cli.main import main\n"
           "main()\n")


def cache_runs(args, root: Path, work: Path) -> dict:
    tree = work / "models-copy"  # the changed case retrains one model: in a copy
    shutil.copytree(root, tree, symlinks=True)
    cache = work / "cache"
    m24 = write_manifest(work / "cached24.toml", MODELS, tree, work / "cached24")
    cmd = [*OURS, "batch", str(m24), "--jobs", str(args.jobs), "--cache", str(cache)]
    log = work / "cache.log"
    rc, fill_wall, _ = run_child(cmd, log)
    fill = summary(log)
    print(f"  fill cache: {fill_wall:.2f} s {fill}", file=sys.stderr)
    if rc != 0:
        sys.exit(f"filling the cache failed:\n{tail(log)}")
    walls, counts = [], []
    for i in range(args.repeat):
        rc, wall, rss = run_child(cmd, log)
        counts.append(summary(log))
        walls.append(wall)
        print(f"  cached re-run {i + 1}: {wall:.2f} s, {rss:.0f} MB, {counts[-1]}", file=sys.stderr)
    with_baseline = baseline_runs(args, cmd, work)
    rc, _, rss = run_child([PY, "-c", WRAPPER, *cmd[len(OURS):]], log)
    tf_imported = re.search(r"TENSORFLOW_IMPORTED (True|False)", log.read_text())
    tf_imported = tf_imported.group(1) if tf_imported else "unknown"
    rc, _, _ = run_child([PY, "-X", "importtime", "-c", WRAPPER, *cmd[len(OURS):]], log)
    importtime_tf = sum(1 for line in log.read_text().splitlines()
                        if line.startswith("import time:") and re.search(r"\btensorflow\b", line))
    # one checkpoint retrained (another seed): only it converts
    rc, _, _ = run_child([PY, str(ROOT / "models" / "batch_models.py"), str(tree), "--only",
                          CHANGED, "--seed", "7"], work / "rebuild.log")
    if rc != 0:
        sys.exit(f"retraining {CHANGED} failed:\n{tail(work / 'rebuild.log')}")
    rc, changed_wall, changed_rss = run_child(cmd, log)
    changed = summary(log)
    rebuilt = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("ok ")]
    print(f"  one changed: {changed_wall:.2f} s {changed} rebuilt {rebuilt}", file=sys.stderr)
    return {"fill": fill_wall, "fill_counts": fill, "wall": statistics.median(walls),
            "runs": walls, "counts": counts[-1], "rss": rss, "tf_imported": tf_imported,
            "importtime_tf_lines": importtime_tf, "changed_wall": changed_wall,
            "changed_rss": changed_rss, "changed": changed, "rebuilt": rebuilt, **with_baseline}


def baseline_runs(args, cmd: list[str], work: Path) -> dict:
    """The cached re-run with --baseline (this run's report.json, 3 models 1 % smaller) and two
    budgets it keeps: {"baseline_wall", "baseline_runs", "baseline_line", "baseline_tf"}."""
    data = json.loads((work / "cached24" / "report.json").read_text())
    for job in data["jobs"][:3]:
        for artifact in job["artifacts"]:
            artifact["bytes"] = int(artifact["bytes"] * 0.99)
    base = work / "baseline.json"
    base.write_text(json.dumps(data))
    extra = ["--baseline", str(base), "--fail-on", "size > +5%", "--fail-on", "ops > +0"]
    log, walls = work / "baseline.log", []
    for i in range(args.repeat):
        rc, wall, rss = run_child([*cmd, *extra], log)
        line = next((x for x in log.read_text().splitlines() if x.startswith("baseline ")), "")
        print(f"  cached re-run with --baseline {i + 1}: {wall:.2f} s, {rss:.0f} MB, rc {rc}: "
              f"{line}", file=sys.stderr)
        if rc != 0 or not (work / "cached24" / "report.md").exists():
            sys.exit(f"the --baseline run failed (rc {rc}):\n{tail(log)}")
        walls.append(wall)
    run_child([PY, "-c", WRAPPER, *cmd[len(OURS):], *extra], log)
    found = re.search(r"TENSORFLOW_IMPORTED (True|False)", log.read_text())
    return {"baseline_wall": statistics.median(walls), "baseline_runs": walls,
            "baseline_line": line, "baseline_tf": found.group(1) if found else "unknown"}


# -- memory ---------------------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return kids


def _status_kb(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def run_sampled(cmd: list[str], log: Path, interval: float = 0.02) -> dict:
    """Run cmd under /usr/bin/time, sampling the VmHWM of every multiprocessing spawn child below
    it (the workers) until it ends: {"rc", "wall", "rss" (time's %M, MB), "workers": {pid: MB},
    "driver" (MB)}."""
    rss_file = log.with_suffix(".rss")
    workers: dict[int, int] = {}
    driver = [0]
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([TIME, "-f", "%M", "-o", str(rss_file), *cmd], stdout=out,
                                stderr=subprocess.STDOUT, env=CHILD_ENV)
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                todo = _children(proc.pid)
                for top in todo:
                    driver[0] = max(driver[0], _status_kb(top, "VmHWM") or 0)
                while todo:
                    pid = todo.pop()
                    todo += _children(pid)
                    line = _cmdline(pid)
                    if "spawn_main" in line and "resource_tracker" not in line:
                        hwm = _status_kb(pid, "VmHWM")
                        if hwm:
                            workers[pid] = max(workers.get(pid, 0), hwm)
                stop.wait(interval)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        rc = proc.wait()
        wall = time.perf_counter() - start
        stop.set()
        thread.join()
    rss_kib = int(rss_file.read_text().strip().splitlines()[-1])
    return {"rc": rc, "wall": wall, "rss": rss_kib / 1024,
            "workers": {pid: kb / 1024 for pid, kb in workers.items()}, "driver": driver[0] / 1024}


LEAK = ("import sys\n"
        "from graphfreeze.batch import run\n"
        "report = run(sys.argv[1], jobs=1, cache=None, recycle_after=int(sys.argv[2]))\n"
        "print(report.counts())\n")


def memory(args, root: Path, work: Path) -> dict:
    cnn = next(m for m in MODELS if m.name == CNN)
    model_dir = (root / cnn.source).parent  # a model_dir (its `checkpoint` names the prefix)
    links = work / "cnn-copies"
    links.mkdir()
    copies = []
    for i in range(args.copies):
        link = links / f"cnn_{i:03d}"
        link.symlink_to(model_dir, target_is_directory=True)
        copies.append(dataclasses.replace(cnn, name=f"cnn_{i:03d}", source=link.name))
    m100 = write_manifest(work / "cnn100.toml", copies, links, work / "cnn100", ("tflite",))
    singles = []
    for i in range(args.repeat):
        rc, wall, rss = run_child([*OURS, str(model_dir), "--outputs", "probs", "--target",
                                   "tflite", "-o", str(work / "single.tflite"), "--force"],
                                  work / "single.log")
        print(f"  single freeze --target tflite run {i + 1}: {wall:.2f} s, {rss:.0f} MB, rc {rc}",
              file=sys.stderr)
        if rc != 0:
            sys.exit(f"single tflite run failed:\n{tail(work / 'single.log')}")
        singles.append((wall, rss))
    batch = run_sampled([*OURS, "batch", str(m100), "--jobs", "1", "--no-cache"],
                        work / "cnn100.log")
    batch["counts"] = summary(work / "cnn100.log")
    print(f"  {args.copies} tflite jobs, --jobs 1: {batch['wall']:.1f} s, time %M "
          f"{batch['rss']:.0f} MB, {len(batch['workers'])} workers, max VmHWM "
          f"{max(batch['workers'].values(), default=0):.0f} MB {batch['counts']}", file=sys.stderr)
    result = {"single_wall": statistics.median(w for w, _ in singles),
              "single_rss": statistics.median(r for _, r in singles), "batch": batch}
    if args.leak_check:
        leak = run_sampled([PY, "-c", LEAK, str(m100), str(args.copies)], work / "leak.log")
        print(f"  no recycling: {leak['wall']:.1f} s, {len(leak['workers'])} worker(s), VmHWM "
              f"{max(leak['workers'].values(), default=0):.0f} MB", file=sys.stderr)
        result["leak"] = leak
    return result


# -- report ---------------------------------------------------------------------------------------

def verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def report(args, t: dict, c: dict, m: dict) -> str:
    j = args.jobs
    b14, b24 = t[f"batch --jobs {j} (14)"]["wall"], t[f"batch --jobs {j} (24)"]["wall"]
    fg14, fl14, fl24 = (t["freeze_graph loop (14)"]["wall"], t["freeze loop (14)"]["wall"],
                        t["freeze loop (24)"]["wall"])
    code = f"graphfreeze at commit {SNAPSHOT[0]}" if SNAPSHOT else "graphfreeze's working tree"
    lines = [f"{code}. Timing: {args.repeat} rounds, medians (load average during the runs "
             f"{t['_load'][0]:.1f}-{t['_load'][1]:.1f} on {os.cpu_count()} cores).", "",
             "| run | models | median wall s | runs | peak RSS MB (largest process) |",
             "|---|---|---|---|---|"]
    for name, row in t.items():
        if name.startswith("_"):
            continue
        count = re.search(r"\((\d+|other 10)\)", name).group(1)
        runs = ", ".join(f"{w:.1f}" for w in row["runs"])
        lines.append(f"| {name.rsplit(' (', 1)[0]} | {count} | {row['wall']:.2f} | {runs} "
                     f"| {row['rss']:.0f} |")
    lines += ["", "| ratio | value | target | |", "|---|---|---|---|",
              f"| batch (14) / freeze_graph loop (14) | {b14 / fg14:.2f} | <= 0.25 "
              f"| {verdict(b14 / fg14 <= TARGETS['freeze_graph'])} |",
              f"| batch (24) / freeze_graph loop (14) | {b24 / fg14:.2f} | (all 24 vs 14) | |",
              f"| batch (14) / freeze loop (14) | {b14 / fl14:.2f} | <= 0.4 "
              f"| {verdict(b14 / fl14 <= TARGETS['freeze'])} |",
              f"| batch (24) / freeze loop (24) | {b24 / fl24:.2f} | <= 0.4 "
              f"| {verdict(b24 / fl24 <= TARGETS['freeze'])} |",
              f"| batch --jobs 1 (24) / freeze loop (24) | "
              f"{t['batch --jobs 1 (24)']['wall'] / fl24:.2f} | (one core) | |", ""]
    cached_ok = c["wall"] < TARGETS["cached_s"] and c["tf_imported"] == "False"
    lines += ["| cache case | wall s | jobs ok / cached / failed | TensorFlow imported | |",
              "|---|---|---|---|---|",
              f"| first run, filling the cache | {c['fill']:.2f} | {_counts(c['fill_counts'])} "
              "| yes (workers) | |",
              f"| re-run, nothing changed (median of {len(c['runs'])}: "
              f"{', '.join(f'{w:.2f}' for w in c['runs'])}) | {c['wall']:.2f} "
              f"| {_counts(c['counts'])} | {'no' if c['tf_imported'] == 'False' else 'YES'} "
              f"(`'tensorflow' in sys.modules` = {c['tf_imported']}; -X importtime lines naming "
              f"tensorflow: {c['importtime_tf_lines']}) | {verdict(cached_ok)} (< 1.0 s, no TF) |",
              f"| re-run with `--baseline` and 2 `--fail-on` budgets (median of "
              f"{len(c['baseline_runs'])}: {', '.join(f'{w:.2f}' for w in c['baseline_runs'])}; "
              f"`{c['baseline_line']}`) | {c['baseline_wall']:.2f} | {_counts(c['counts'])} "
              f"| {'no' if c['baseline_tf'] == 'False' else 'YES'} "
              f"| {verdict(c['baseline_wall'] < TARGETS['baseline_s'] and c['baseline_tf'] == 'False')}"
              " (< 1.5 s, no TF) |",
              f"| {CHANGED} retrained, re-run | {c['changed_wall']:.2f} | {_counts(c['changed'])} "
              f"| yes (one worker) | rebuilt: {', '.join(c['rebuilt']) or 'none'} "
              f"{verdict(c['rebuilt'] == [CHANGED])} |", ""]
    batch = m["batch"]
    hwm = sorted(batch["workers"].values())
    ratio = hwm[-1] / m["single_rss"] if hwm else float("nan")
    lines += [f"| memory case ({args.copies} x small CNN -> tflite) | wall s | peak RSS MB | |",
              "|---|---|---|---|",
              f"| single `freeze --target tflite` (median of {args.repeat}) "
              f"| {m['single_wall']:.2f} | {m['single_rss']:.0f} | reference |",
              f"| batch --jobs 1, {len(hwm)} workers (recycled every 8 jobs): worker VmHWM max "
              f"(median {statistics.median(hwm) if hwm else 0:.0f}, min {hwm[0] if hwm else 0:.0f})"
              f" | {batch['wall']:.1f} | {hwm[-1] if hwm else 0:.0f} | {ratio:.2f}x "
              f"{verdict(ratio <= TARGETS['rss'])} (<= 1.5x) |",
              f"| same batch: /usr/bin/time %M (driver and workers), driver VmHWM | | "
              f"{batch['rss']:.0f}, {batch['driver']:.0f} | {_counts(batch['counts'])} |"]
    if "leak" in m:
        leak = m["leak"]
        top = max(leak["workers"].values(), default=0)
        lines.append(f"| for comparison: one worker never recycled (batch.run(recycle_after="
                     f"{args.copies})), VmHWM | {leak['wall']:.1f} | {top:.0f} "
                     f"| {top / m['single_rss']:.2f}x |")
    return "\n".join(lines) + "\n"


def _counts(counts: dict) -> str:
    if not counts:
        return "?"
    return f"{counts['ok']} / {counts['cached']} / {counts['failed']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="batch workers (default 2)")
    parser.add_argument("--copies", type=int, default=100, help="memory case: tflite jobs")
    parser.add_argument("--no-leak-check", dest="leak_check", action="store_false",
                        help="skip the never-recycled worker run")
    parser.add_argument("--models", type=Path, default=ROOT / "bench" / ".cache" / "batch")
    parser.add_argument("--only", choices=["timing", "cache", "memory"], action="append",
                        help="run only these parts (repeatable)")
    parser.add_argument("--snapshot", metavar="REV",
                        help="run graphfreeze as committed at REV (git archive into the temp dir, "
                             "on PYTHONPATH) instead of the working tree: the cache keys digest "
                             "graphfreeze's own code, so edits made meanwhile would miss it")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    parts = args.only or ["timing", "cache", "memory"]
    ensure_models(args.models)
    root = args.models.resolve()
    t, c, m = {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="bench_batch.") as tmp:
        work = Path(tmp)
        if args.snapshot:
            use_snapshot(args.snapshot, work / "snapshot")
        print(f"load average at start {load()}", file=sys.stderr)
        run_child([PY, "-c", "import tensorflow"], work / "warm.log")  # warm the page cache
        if "timing" in parts:
            t = timing(args, root, work)
        if "cache" in parts:
            c = cache_runs(args, root, work)
        if "memory" in parts:
            m = memory(args, root, work)
    if args.json:
        args.json.write_text(json.dumps({"timing": t, "cache": c, "memory": m}, indent=1,
                                        default=str))
    if len(parts) < 3:
        print(json.dumps({"timing": t, "cache": c, "memory": m}, indent=1, default=str))
        return
    text = report(args, t, c, m)
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
