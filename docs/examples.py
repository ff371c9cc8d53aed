"""Every command output shown in README.md and docs/*.md, regenerated from real runs.

    python docs/examples.py [--only ID,ID] [--keep DIR] [--list]
    python docs/examples.py --samples models/out     # `make samples`: the README's models

A block in a page is marked by its example's ID:

    <!-- output: ID -->
    ```console
    $ freeze inspect model.ckpt-200
    ...
    ```
    <!-- /output -->

For each example the script builds the sample models it needs (models/*.py, into DIR/build, once
per build), copies them into a fresh folder, runs the example's commands there with relative
paths (`freeze` and `python` from the interpreter running this script, PYTHONPATH as given), and
rewrites the block with each command and its output (stdout and stderr as a terminal shows
them). An example with a `cd` is one of the README's: its block starts with `$ cd FOLDER` (from
the checkout's root, where `make demo` and `make samples` built the models), and its hidden
`setup` is only what earlier README blocks did; tests/e2e/test_readme.py types the README's
commands in order on a copy of the checkout. Timings, dates, cache keys, the CPU's name and
the scratch folder's path are normalised (see NORMALISE) so a re-run writes the same text.
`--keep DIR` keeps builds between runs.

No TensorFlow is imported here (tests/test_docs.py imports EXAMPLES to check the markers).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- output: (?P<id>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /output -->)", re.S)
WIDTH = "120"  # the terminal width outputs are made at (rich wraps tables to it)

# name -> (builds it needs first, shell commands run in DIR/build/NAME; {models} is models/)
BUILDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "iris": ((), ("python {models}/iris_dnn.py --out .",)),
    # small_cnn.py's Keras initializers take no seed: Keras' global seed makes the build repeatable
    "cnn": ((), ("python -c 'import sys; sys.path.insert(0, \"{models}\"); import small_cnn, tf_keras; "
                 "tf_keras.utils.set_random_seed(0); small_cnn.build(\".\")'",)),
    "odd": ((), ("python -c 'import sys; sys.path.insert(0, \"{models}\"); import build_samples; "
                 "build_samples.SAMPLES[\"iris_odd_op\"](\".\")'",)),
    "other": ((), ("python {models}/other_sources.py .",)),
    "broken": (("other",), ("python {models}/broken_graphs.py ../other/frozen.pb .",)),
    "hostile": ((), ("python {models}/hostile.py models target",)),
    "shapes": ((), ("python {models}/shapes.py . --kind tiny",)),
    "qat": ((), ("python {models}/zoo.py . --only qat_cnn",)),
    "reduce": ((), ("python {models}/families.py . --only reduce_cnn_erfinv",)),
}


@dataclass(frozen=True)
class Example:
    """Commands run in `folder` (relative to a fresh folder holding a copy of each of `needs`,
    under its build's name), shown as `$ command` and its output. `exits`: the exit code each
    command must end with (0 when not listed). `setup`: commands run first and not shown (the
    page says what they did). `bare`: show the output alone (a file's content), in `lang`."""

    needs: tuple[str, ...]
    folder: str
    commands: tuple[str, ...]
    exits: tuple[int, ...] = ()
    setup: tuple[str, ...] = ()
    lang: str = "console"
    bare: bool = False
    env: tuple[tuple[str, str], ...] = ()
    cd: str = ""

    def shown(self) -> list[str]:
        """The commands its block shows: a `cd` into its README folder first."""
        return [*([f"cd {self.cd}"] if self.cd not in ("", ".") else []), *self.commands]


TRAIN = "--calibration train.npz --verify-data val.npz"
# `make demo`'s conversion, in models/out/iris
DEMO = "freeze --ckpt model.ckpt-200 --outputs probs --target android,tflite,onnx -o demo/ --force"
# `make batch-demo` in the checkout: models/models.toml over make demo's and make samples' models
BATCH_DEMO = "PYTHONPATH=models freeze batch models/models.toml --jobs 2 --cache models/out/cache"
BATCH_CHECKOUT = ("mkdir -p models/out",
                  "cp {root}/models/models.toml {root}/models/other_sources.py models/",
                  "mv iris other models/out/")
EXAMPLES: dict[str, Example] = {
    # getting started
    "freeze": Example(("iris",), "iris", ("freeze --ckpt model.ckpt-200 --outputs probs",),
                      cd="models/out/iris"),
    "sidecar": Example(("iris",), "iris", ("cat model.ckpt-200.pb.json",), lang="json", bare=True,
                       setup=("freeze --ckpt model.ckpt-200 --outputs probs",)),
    "savedmodel": Example(("other",), "other", ("freeze tf2_savedmodel",)),
    "fixed-shape": Example(("cnn",), "cnn", (
        'freeze --ckpt model.ckpt-200 --outputs probs --inputs "images:0[1,16,16,3]" '
        "--target android,tflite,onnx -o fixed/",)),
    # targets
    "targets": Example((), ".", ("freeze targets",)),
    "targets-head": Example((), ".", ("freeze targets | head -9",), cd="."),
    "multi-target": Example(("iris",), "iris", (
        "freeze --ckpt model.ckpt-200 --outputs probs "
        "--target android,server,tflite,edge-int8,onnx -o all/",)),
    "qat": Example(("qat",), "qat/qat_cnn", ("freeze model.h5 --target tflite,edge-int8,onnx -o out/",)),
    "android-toml": Example((), ".", ("cat {root}/converters/formats/frozen_graph/targets/"
                                      "android.toml",), lang="toml", bare=True),
    # verification
    "verify-data": Example(("shapes",), "shapes", (
        "freeze model.keras --target tflite,edge-int8 --verify-data val.npz -o out/",)),
    "golden": Example(("iris",), "iris", (
        "freeze --ckpt model.ckpt-200 --outputs probs --target tflite,edge-int8 "
        "--save-golden golden -o out/",)),
    "verify-golden": Example(("iris",), "iris", (
        "freeze --ckpt model.ckpt-200 --outputs probs --target edge-int8 --save-golden golden -o out/",
        "freeze verify out/model.ckpt-200.edge-int8.tflite --golden golden",
        "freeze verify out/model.ckpt-200.edge-int8.tflite --golden golden --tolerance 1e-3"),
        exits=(0, 0, 5),
        cd="models/out/iris"),
    "verify": Example(("iris",), "iris", (
        "freeze verify out/model.ckpt-200.edge-int8.tflite --golden golden",
        "freeze verify out/model.ckpt-200.tflite --golden golden --tolerance 1e-9"), exits=(0, 5),
        setup=("freeze --ckpt model.ckpt-200 --outputs probs --target tflite,edge-int8 "
               "--save-golden golden -o out/",)),
    "diverge": Example(("iris",), "iris", (
        "freeze --ckpt model.ckpt-200 --outputs probs --target tflite-fp16 --tolerance 1e-7 "
        "-o iris.tflite",), exits=(5,)),
    "bad-data": Example(("iris", "shapes"), "iris", (
        "freeze --ckpt model.ckpt-200 --outputs probs --verify-data ../shapes/val.npz",), exits=(3,)),
    "benchmark": Example(("cnn",), "cnn", (
        "freeze --ckpt model.ckpt-200 --outputs probs --target android,tflite,onnx -o out/ "
        "--benchmark",)),
    # quantization
    "quantize-until": Example(("shapes",), "shapes", (
        f"freeze model.keras --target tflite,edge-int8 {TRAIN} --quantize-until 1% -o out/",)),
    "quantize-search": Example(("shapes",), "shapes", (
        f"freeze model.keras --target edge-int8 {TRAIN} --io-type float --quantize-until 0.0008 "
        "-o until.tflite",)),
    # inspect
    "inspect": Example(("iris",), "iris", ("freeze inspect model.ckpt-200",)),
    "inspect-keras": Example(("other",), "other", ("freeze inspect model.keras",), cd="models/out/other"),
    "inspect-odd": Example(("odd",), "odd", ("freeze inspect model.ckpt-200 | tail -3",)),
    "inspect-gpu": Example(("iris",), "iris", ("freeze inspect --device gpu demo/model.ckpt-200.tflite",),
                           cd="models/out/iris", setup=(DEMO,)),
    # reduce, explain
    "reduce": Example(("reduce",), "reduce/reduce_cnn_erfinv", (
        "freeze reduce model.ckpt --outputs probs --target tflite -o repro/",),
        cd="models/out/reduce/reduce_cnn_erfinv"),
    "explain": Example(("iris",), "iris", (
        "freeze --ckpt model.ckpt-200 --outputs probs --target tflite --explain -o out/",)),
    # untrusted models and scan
    "unsafe": Example(("hostile",), "hostile/models", (
        "freeze ckpt_write/model.ckpt-1 --outputs probs",
        "freeze ckpt_read/model.ckpt-1 --outputs probs,leak",
        "freeze sm_write", "freeze sm_asset", "freeze keras_write.h5"), exits=(0, 3, 3, 3, 3)),
    "scan": Example(("iris", "other", "hostile"), ".", (
        "freeze scan iris other/model.keras other/tf2_savedmodel other/frozen.pb hostile/models",
        "freeze scan README.md"), exits=(3, 3), setup=("echo '# not a model' > README.md",)),
    "scan-short": Example(("iris", "other", "hostile"), ".", (
        "freeze scan iris other/model.keras hostile/models/ckpt_read hostile/models/sm_asset",),
        exits=(3,), cd="models/out"),
    "scan-json": Example(("other", "hostile"), ".", (
        "freeze scan hostile/models/ckpt_read other/model.keras --json",), exits=(3,)),
    # troubleshooting
    "errors": Example(("iris", "other"), ".", (
        "freeze --ckpt iris --outputs prob",
        "freeze --ckpt iris",
        "freeze --ckpt iris --outputs probs -o iris.pb",
        "freeze other/custom.keras",
        "freeze other/tf1_savedmodel --signature predict",
        "freeze iris_cut --outputs probs"), exits=(3, 3, 4, 3, 3, 3),
        setup=("touch iris.pb", "cp -r iris iris_cut",
               "python -c \"import os; os.truncate('iris_cut/model.ckpt-200.index', 20)\"")),
    "broken-graphs": Example(("broken",), "broken", (
        "freeze cycle.pb --outputs probs", "freeze output_index.pb --outputs probs",
        "freeze calls_itself.pb --outputs probs", "freeze huge_fill.pb --outputs probs"),
        exits=(3, 3, 3, 3)),
    "bad-option": Example(("iris",), "iris", (
        "freeze --ckpt model.ckpt-200 --outputs probs --target onnx --opset 999",), exits=(6,)),
    # batch, cache
    "batch-demo": Example(("iris", "other"), ".", (BATCH_DEMO,), setup=BATCH_CHECKOUT, cd="."),
    "batch-cached": Example(("iris", "other"), ".", (BATCH_DEMO,),
                            setup=(*BATCH_CHECKOUT, BATCH_DEMO)),
    "batch-budget": Example(("iris",), ".", (
        "cat models.toml",
        'freeze batch models.toml --cache cache --baseline base.json --fail-on "size > +1%"'),
        exits=(0, 8), setup=(
            "printf '%s\\n' 'schema_version = 1' '[defaults]' 'out_dir = \"dist\"' "
            "'[[model]]' 'name = \"iris\"' 'source = \"iris\"' 'outputs = [\"probs\"]' "
            "'targets = [\"android\", \"edge-int8\"]' 'per_tensor = true' > models.toml",
            "freeze batch models.toml --cache cache", "cp dist/report.json base.json",
            "sed -i '/per_tensor/d' models.toml")),
    "batch-bad-option": Example(("iris",), ".", ("cat models.toml", "freeze batch models.toml"),
                                exits=(0, 6), setup=(
        "printf '%s\\n' 'schema_version = 1' '[[model]]' 'name = \"iris\"' 'source = \"iris\"' "
        "'opset = 999' 'outputs = [\"probs\"]' 'targets = [\"onnx\"]' > models.toml",)),
    "cache-demo": Example(("iris", "other"), ".", (
        "freeze cache ls models/out/cache | tail -3",
        "freeze cache prune models/out/cache --older-than 30d --dry-run"),
        setup=(*BATCH_CHECKOUT, BATCH_DEMO), cd="."),
    "cache-ls": Example(("iris",), ".", (
        "freeze cache ls cache", "freeze cache prune cache --older-than 30d --dry-run",
        "freeze cache prune cache --max-size 1KB"),
        setup=("freeze batch iris --outputs probs --target android,tflite --cache cache",)),
    # python api
    "python-api": Example(("iris",), "iris", ("python api.py 2>/dev/null",), setup=(
        "cp {root}/docs/snippets/api.py .",)),
    "python-api-code": Example((), ".", ("cat {root}/docs/snippets/api.py",), lang="python",
                               bare=True),
}

DURATION = r"\d+(?:\.\d+)?"
# (pattern, replacement) applied to every output, in order
NORMALISE = [
    (re.compile(rf"\b{DURATION} s\b"), "x.x s"),  # durations
    (re.compile(rf"(median|p90) {DURATION} ms"), r"\1 x.xx ms"),
    (re.compile(r"(warm-up; )[^)]+\)"), r"\1CPU)"),  # the CPU's name
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?( UTC)?"), "YYYY-MM-DD hh:mm"),
    (re.compile(r"\((just now|\d+ \w+ ago)\)"), "(just now)"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{12}(?![0-9a-f])"), "0123456789ab"),  # cache keys
]
JOB_LINE = re.compile(r"(ok|cached|failed|timed-out|not-run|OVER-BUDGET) +(\S+)")


def normalise(text: str, scratch: str) -> str:
    text = text.replace(scratch, "/tmp/work")
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    text = _latency_column(_jobs_sorted(text))
    return "\n".join(line.rstrip() for line in text.splitlines())


def _jobs_sorted(text: str) -> str:
    """`freeze batch` prints a line per job as each finishes: runs of them sorted by job name."""
    out: list[str] = []
    run: list[str] = []
    for line in [*text.split("\n"), None]:
        if line is not None and JOB_LINE.match(line):
            run.append(line)
            continue
        out += sorted(run, key=lambda job: JOB_LINE.match(job)[2])
        run = []
        if line is not None:
            out.append(line)
    return "\n".join(out)


def _latency_column(text: str) -> str:
    """A verification table's latency column (`--benchmark`) at a fixed width: it holds timings."""
    lines = text.split("\n")
    header = next((i for i, line in enumerate(lines) if re.search(r"┃\s+latency ┃$", line)), None)
    if header is None:
        return text
    end = next(i for i in range(header, len(lines)) if lines[i].startswith("└"))
    for i in range(header - 1, end + 1):
        line = lines[i]
        cut = max(line.rfind(c, 0, len(line) - 1) for c in "┳┃╇│┴")
        cell = line[cut + 1:-1]
        if set(cell) <= set("━─"):
            cell = cell[0] * 9
        else:
            cell = " latency " if "latency" in cell else (" x.xx ms " if cell.strip() else " " * 9)
        lines[i] = line[:cut + 1] + cell + line[-1]
    return "\n".join(lines)


def build(name: str, root: Path, env: dict, samples: bool = False) -> Path:
    """DIR/build/NAME, made once (its commands are kept in .built); `samples`: DIR/NAME, left
    as it is if it exists (the user's sample folder, with what they wrote in it)."""
    deps, commands = BUILDS[name]
    for dep in deps:
        build(dep, root, env, samples)
    folder = root / name if samples else root / "build" / name
    stamp = folder / ".built"
    script = "\n".join(c.format(models=ROOT / "models") for c in commands)
    if (stamp.exists() and stamp.read_text() == script) or (samples and folder.is_dir()):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    print(f"building {name}", file=sys.stderr)
    done = subprocess.run(["bash", "-ec", script], cwd=folder, env=env, capture_output=True,
                          text=True)
    if done.returncode:
        sys.exit(f"building {name} failed:\n{done.stdout}{done.stderr}")
    stamp.write_text(script)
    return folder


def environment(scratch: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "NO_COLOR")}
    bin_dir = os.path.dirname(sys.executable)
    env.update(PATH=f"{bin_dir}:{env.get('PATH', '')}", COLUMNS=WIDTH, LINES="50", TERM="dumb",
               PYTHONUNBUFFERED="1", TZ="UTC", TF_CPP_MIN_LOG_LEVEL="3",
               XDG_CACHE_HOME=str(scratch / "xdg-cache"))
    return env


def run_example(name: str, example: Example, root: Path, env: dict) -> str:
    """The block's text: each command and what it printed, normalised."""
    work = root / "run" / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for need in example.needs:
        src = build(need, root, env)
        shutil.copytree(src, work / need, ignore=shutil.ignore_patterns(".built"), symlinks=True)
    cwd = work / example.folder
    env = {**env, **dict(example.env), "XDG_CACHE_HOME": str(work / ".cache")}
    shown = [f"$ {command}" for command in example.shown()[:-len(example.commands)]]
    for i, command in enumerate((*example.setup, *example.commands)):
        command = command.format(root=ROOT)
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        is_setup = i < len(example.setup)
        expected = 0 if is_setup else _exit(example, i - len(example.setup))
        if done.returncode != expected:
            sys.exit(f"{name}: `{command}` exited {done.returncode}, not {expected}:\n{done.stdout}")
        if is_setup:
            continue
        text = normalise(done.stdout, str(work))
        if example.bare:
            shown.append(text)
        else:
            note = f"    # exit {done.returncode}" if done.returncode else ""
            shown.append(f"$ {command}{note}\n{text}".rstrip())
    return "\n".join(shown)


def _exit(example: Example, i: int) -> int:
    return example.exits[i] if i < len(example.exits) else 0


def shown_commands(block: str) -> list[str]:
    """The commands a block shows (its `$ ` lines, without the `# exit N` note)."""
    return [re.sub(r"\s+# exit \d+$", "", line[2:]) for line in block.splitlines()
            if line.startswith("$ ")]


def markers(text: str) -> list[tuple[str, str]]:
    """(example ID, block body) for every marked block in a page."""
    return [(m["id"], m["body"]) for m in BLOCK.finditer(text)]


def rewrite(page: Path, outputs: dict[str, str]) -> bool:
    text = page.read_text()

    def replace(m):
        if m["id"] not in outputs:
            return m.group(0)
        lang = EXAMPLES[m["id"]].lang
        return f"{m.group(1)}```{lang}\n{outputs[m['id']]}\n```\n{m.group(4)}"

    new = BLOCK.sub(replace, text)
    if new != text:
        page.write_text(new)
    return new != text


def samples(into: Path) -> None:
    """`make samples`: every model a README example needs, built into `into`."""
    needs = sorted({need for name, _ in markers((ROOT / "README.md").read_text())
                    for need in EXAMPLES[name].needs})
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gfsamples-") as scratch:
        env = environment(Path(scratch))
        for need in needs:
            present = (into / need).is_dir()
            build(need, into.resolve(), env, samples=True)
            print(f"{into / need}: {'already there' if present else 'built'}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated example IDs (default: every one used)")
    parser.add_argument("--keep", help="scratch folder kept between runs (builds are reused)")
    parser.add_argument("--list", action="store_true", help="list the examples and where used")
    parser.add_argument("--print", action="store_true", help="print the blocks, rewrite nothing")
    parser.add_argument("--samples", metavar="DIR", help="build the models the README's examples "
                        "use into DIR/NAME (those missing), run nothing")
    args = parser.parse_args()
    if args.samples:
        return samples(Path(args.samples))
    used: dict[str, list[str]] = {}
    for page in PAGES:
        for name, _ in markers(page.read_text()):
            if name not in EXAMPLES:
                sys.exit(f"{page.relative_to(ROOT)}: no example '{name}' in docs/examples.py")
            used.setdefault(name, []).append(str(page.relative_to(ROOT)))
    if args.list:
        for name in EXAMPLES:
            print(f"{name:<16} {', '.join(used.get(name, ['(unused)']))}")
        return
    names = args.only.split(",") if args.only else list(used)
    root = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="gfdocs-"))
    root.mkdir(parents=True, exist_ok=True)
    env = environment(root)
    outputs = {}
    for name in names:
        print(f"running {name}", file=sys.stderr)
        outputs[name] = run_example(name, EXAMPLES[name], root, env)
        if args.print:
            print(f"<!-- output: {name} -->\n{outputs[name]}\n<!-- /output -->", flush=True)
    for page in [] if args.print else PAGES:
        if rewrite(page, outputs):
            print(f"rewrote {page.relative_to(ROOT)}", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
