"""Benchmark a warm shared gs:// cache (issue 17): `freeze batch` of the 24-model bench with an
unchanged manifest, as a fresh CI machine runs it (its own TMPDIR, HOME and out_dir, nothing
local), against the GCS emulator (tests/gcs_emulator.py, on 127.0.0.1, in this process).

    python bench/bench_fleet_cache.py [--repeat 5] [--jobs 2] [--targets android]
        [--models bench/.cache/batch] [--markdown FILE]

Cases: fill (the cold run that publishes every entry), warm gs:// (each repeat a new machine:
wall time of the whole `freeze batch` process, and whether TensorFlow was imported), warm local
(the same with a local --cache, for reference), `freeze cache ls` and `prune --dry-run` on the
bucket. The emulator shares the machine's cores and answers in well under a millisecond; real
GCS adds ~20-60 ms a request (a hit makes 1 + files + 1 requests, files read in parallel).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "models"))
sys.path.insert(0, str(ROOT / "bench"))
from batch_models import MODELS, manifest  # noqa: E402
from bench_freeze import emit  # noqa: E402

from tests.gcs_emulator import GcsEmulator  # noqa: E402

FREEZE = str(Path(sys.executable).parent / "freeze")
CACHE = "gs://bucket/fleet"
WRAPPER = """
import sys
from graphfreeze_cli.main import main
try:
    main(sys.argv[1:])
finally:
    print("tensorflow imported: %s" % ("tensorflow" in sys.modules), file=sys.stderr)
"""


def ensure_models(folder: Path) -> None:
    if (folder / "models.toml").exists():
        return
    print(f"building the 24 models into {folder} ...", file=sys.stderr)
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(ROOT / "models" / "batch_models.py"), str(folder)],
                   check=True, capture_output=True)


def new_machine(work: Path, name: str, models: Path, targets: list[str]) -> tuple[Path, dict]:
    """A working folder with its own manifest (absolute sources), TMPDIR and HOME."""
    folder = work / name
    for sub in ("tmp", "home"):
        (folder / sub).mkdir(parents=True)
    absolute = [dataclasses.replace(m, source=str(models / m.source)) for m in MODELS]
    (folder / "models.toml").write_text(manifest(absolute, str(folder / "dist"), targets))
    return folder, {"TMPDIR": str(folder / "tmp"), "HOME": str(folder / "home")}


def timed(env: dict, cwd: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.monotonic()
    done = subprocess.run([*args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--targets", default="android")
    parser.add_argument("--models", type=Path, default=ROOT / "bench" / ".cache" / "batch")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    targets = args.targets.split(",")
    ensure_models(args.models)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, GcsEmulator(Path(tmp)) as gcs:
        gcs.create_bucket("bucket")
        base = {**gcs.env(), "TF_CPP_MIN_LOG_LEVEL": "3"}
        base.pop("XDG_CACHE_HOME", None)
        work = Path(tmp)

        def batch(name: str, cache: str, wrapper: bool = False) -> tuple[float, str]:
            folder, env = new_machine(work, name, args.models, targets)
            cmd = [sys.executable, "-c", WRAPPER] if wrapper else [FREEZE]
            seconds, done = timed({**base, **env}, folder, *cmd, "batch", "models.toml",
                                  "--jobs", str(args.jobs), "--cache", cache)
            return seconds, done.stdout.splitlines()[-2] + " | " + done.stderr.strip()

        seconds, line = batch("fill", CACHE)
        rows.append(("fill gs:// (cold, 24 conversions)", f"{seconds:.1f} s", line))
        local = str(work / "local-cache")
        batch("fill-local", local)
        for label, cache in (("warm gs://", CACHE), ("warm local", local)):
            runs, refilled = [], 0
            for i in range(args.repeat):
                seconds, line = batch(f"{label.split()[1][:5]}-{i}", cache, wrapper=True)
                if f" {len(MODELS)} cached" in line:
                    runs.append(seconds)
                else:  # graphfreeze's code changed meanwhile (a checkout being edited): refilled
                    refilled += 1
            rows.append((f"{label}: whole `freeze batch` (new machine each run)",
                         f"median {statistics.median(runs):.2f} s (min {min(runs):.2f}, "
                         f"max {max(runs):.2f}, n={len(runs)}"
                         + (f"; {refilled} runs not all hits left out" if refilled else "") + ")",
                         line))
        objects = gcs.objects("bucket", "fleet/")
        rows.append(("gs:// cache", f"{sum(n.endswith('/entry.json') for n in objects)} entries, "
                     f"{len(objects)} objects, {sum(map(len, objects.values())) / 1024:.0f} KB", ""))
        folder, env = new_machine(work, "admin", args.models, targets)
        for cmd in (["cache", "ls", CACHE], ["cache", "prune", CACHE, "--max-size", "100KB",
                                              "--dry-run"]):
            seconds, done = timed({**base, **env}, folder, FREEZE, *cmd)
            rows.append((f"`freeze {' '.join(cmd[:2])}`" + (" --dry-run" if "--dry-run" in cmd
                                                             else ""),
                         f"{seconds:.2f} s", done.stdout.splitlines()[-1]))
            if cmd[1] == "ls":
                print(done.stdout)
    lines = [f"{os.cpu_count()} cores, --jobs {args.jobs}, targets {args.targets}, "
             f"{len(MODELS)} models", "", "| case | time | last lines |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    text = "\n".join(lines) + "\n"
    emit(text, args.markdown)


if __name__ == "__main__":
    main()
