"""Adding a format is its folder and one entry point in its own package (its extra): a plugin
package installed for real in a temporary folder (a dist-info on PYTHONPATH) gives the `pbtxt`
format, and the `freeze` command, run in the model's folder, converts to its target with its own
flag (on `--help`), verifies, benchmarks and explains it (the overlay read back by Model
Explorer's own adapter), `freeze verify` reads it back, `freeze reduce` shrinks its refusal and
runs its repro script, and `freeze batch`'s cache key holds its version: every feature with no
change to graphfreeze. The places it touches are counted: its folder and its dist-info."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXPORT = '''
"""export_pbtxt: the frozen graph as a text GraphDef."""

import dataclasses

from graphfreeze.errors import InputError
from graphfreeze.io.trees import artifact_digest
from graphfreeze.options import option
from graphfreeze.plugins import Format, Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos
from gf_pbtxt.runtime import open_pbtxt


@dataclasses.dataclass(frozen=True)
class PbtxtOptions:
    header: str = option("", flag="--pbtxt-header", metavar="TEXT",
                         help="pbtxt: a comment line written first.")
    refuse: tuple[str, ...] = option((), flag="--pbtxt-refuse", metavar="OP",
                                     help="pbtxt: refuse a graph with op OP.")


def run(state, options):
    from google.protobuf import text_format

    for node in state.graph_def.node:
        if node.op in options.refuse:
            raise InputError(f"node '{node.name}' has op '{node.op}', which pbtxt refuses")
    text = (f"# {options.header}\\n" if options.header else "") + \
        text_format.MessageToString(state.graph_def)
    staged = state.files.put(state.output_path, text.encode())
    inputs, outputs = io_infos(state)
    sha256, size = artifact_digest([staged])
    artifact = Artifact(path=state.output_path, sha256=sha256, size=size, format=FORMAT,
                        inputs=inputs, outputs=outputs, staged=staged,
                        facts={"node_count": len(state.graph_def.node)})
    return dataclasses.replace(state, artifact=artifact)


STAGE = Stage("export_pbtxt", run, "graph", "artifact", options=PbtxtOptions,
              summary="text GraphDef", suffix=".pbtxt")
FORMAT = Format("pbtxt", STAGE, open=open_pbtxt, requires=("google.protobuf",), extra="pbtxt")
'''

RUNTIME = '''
"""A text GraphDef run in TensorFlow."""

from graphfreeze.plugins import Session


def open_pbtxt(path, inputs, outputs, *, threads=2, keep=(), untrusted=False, loaded=None):
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    with open(path) as f:
        graph_def = text_format.Parse(f.read(), graph_pb2.GraphDef())
    return PbtxtSession(graph_def, inputs, outputs, threads, keep)


class PbtxtSession(Session):
    label = "TensorFlow (text GraphDef)"

    def __init__(self, graph_def, inputs, outputs, threads, keep):
        self.graph_def, self.inputs, self.outputs = graph_def, inputs, outputs
        self.threads, self.keep = threads, list(keep)

    def run(self, feeds):
        from graphfreeze.graph.session import run_graph_def

        return run_graph_def(self.graph_def, feeds, [o.name for o in self.outputs])

    def tensors(self, feeds):
        from graphfreeze.graph.session import run_graph_def

        return dict(zip(self.keep, run_graph_def(self.graph_def, feeds, self.keep)))
'''

EXPLORER = '''
"""A text GraphDef drawn by Model Explorer's builtin_graphdef adapter: a node keyed by its index."""

from graphfreeze.plugins import Explorer, by_index


def keys(path, nodes):
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    with open(path) as f:
        return by_index(text_format.Parse(f.read(), graph_pb2.GraphDef()), nodes)


EXPLORER = Explorer("builtin_graphdef", "text GraphDefs (.pbtxt)", keys,
                    lambda path: path.endswith(".pbtxt"))
'''

REPRO = '''
"""freeze reduce's repro: the graph refused as the export refuses it, else written as text."""

CONVERT = """
from google.protobuf import text_format

for node in graph_def.node:
    if node.op in {refuse!r}:
        failed(ValueError(f"node '{{node.name}}' has op '{{node.op}}', which pbtxt refuses"))
text = text_format.MessageToString(graph_def)
"""


def script(options, pb, inputs, outputs, compare):
    return CONVERT.format(refuse=tuple(options.refuse))
'''

TARGET = '''schema_version = 1
name = "pbtxt"
description = "Frozen graph as text"
stages = [
  { use = "freeze_variables" },
  { use = "strip_training" },
  { use = "optimize_for_inference" },
  { use = "export_pbtxt" },
  { use = "verify", tolerance = 1e-5 },
  { use = "benchmark" },
]
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The plugin: its folder gf_pbtxt/ and a dist-info naming FORMAT in graphfreeze.formats."""
    site = tmp_path_factory.mktemp("site")
    folder = site / "gf_pbtxt"
    (folder / "targets").mkdir(parents=True)
    (folder / "__init__.py").write_text('"""The pbtxt format."""\n\n'
                                        'from gf_pbtxt.export import FORMAT  # noqa: F401\n')
    (folder / "export.py").write_text(EXPORT)
    (folder / "runtime.py").write_text(RUNTIME)
    (folder / "explorer.py").write_text(EXPLORER)
    (folder / "repro.py").write_text(REPRO)
    (folder / "targets" / "pbtxt.toml").write_text(TARGET)
    _dist_info(site, "1.0")
    made = subprocess.run([sys.executable, "-c", "import gf_pbtxt; from graphfreeze_cli import "
                           "flags; flags.write_format(gf_pbtxt.FORMAT)"],  # its flags.json
                          env=_env(site), capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    return site


def _dist_info(site: Path, version: str) -> None:
    """The package's metadata: its name, version and entry point (no requirements declared)."""
    for old in site.glob("gf_pbtxt-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"gf_pbtxt-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gf-pbtxt\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[graphfreeze.formats]\npbtxt = gf_pbtxt:FORMAT\n")


def _env(site: Path) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}


def freeze(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).with_name("freeze")), *args], cwd=cwd,
                          env=_env(site), capture_output=True, text=True, timeout=600)


def test_a_format_added_as_a_folder_converts_verifies_and_reads_back(site, samples, tmp_path):
    folder = tmp_path / "iris"
    shutil.copytree(samples / "iris", folder)
    listed = freeze(site, folder, "targets")
    assert listed.returncode == 0 and "pbtxt" in listed.stdout and "export_pbtxt" in listed.stdout
    helped = freeze(site, folder, "--help")
    assert helped.returncode == 0 and "--pbtxt-header TEXT" in helped.stdout, helped.stdout
    done = freeze(site, folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target",
                  "pbtxt", "--save-golden", "golden", "--benchmark", "--benchmark-runs", "3",
                  "--explain", "--pbtxt-header", "made by gf-pbtxt")
    assert done.returncode == 0, done.stderr + done.stdout
    assert (folder / "model.ckpt-200.pbtxt").read_text().startswith("# made by gf-pbtxt\n")
    car = json.loads((folder / "model.ckpt-200.pbtxt.json").read_text())
    assert car["format"] == "pbtxt" and car["verification"]["passed"]
    assert car["latency"]["runtime"] == "TensorFlow (text GraphDef)"
    assert car["verification"]["divergence"]["available"] is True
    assert car["verification"]["divergence"]["compared"] > 0
    again = freeze(site, folder, "verify", "model.ckpt-200.pbtxt", "--golden", "golden")
    assert again.returncode == 0 and "passed against the golden inputs in golden" in again.stdout
    # the overlay --explain wrote, read back as `freeze explain` reads it: Model Explorer's own
    # adapter makes the graph, and every result names one of its nodes
    assert car["explain"] == {"divergence": "model.ckpt-200.pbtxt.divergence.json"}
    overlay = json.loads((folder / car["explain"]["divergence"]).read_text())
    read = subprocess.run([sys.executable, "-c", "import json, sys; from graphfreeze.explain "
                           "import serve; e = serve.prepare(sys.argv[1]); print(json.dumps("
                           "[e.adapter, e.matched]))", "model.ckpt-200.pbtxt"],
                          cwd=folder, env=_env(site), capture_output=True, text=True)
    assert read.returncode == 0, read.stderr
    adapter, matched = json.loads(read.stdout)
    assert adapter == "builtin_graphdef"
    assert matched == {"divergence": len(overlay["results"])} and overlay["results"]


def test_its_refusal_is_reduced_and_its_repro_run(site, samples, tmp_path):
    folder = tmp_path / "iris"
    shutil.copytree(samples / "iris", folder)
    done = freeze(site, folder, "reduce", "--ckpt", "model.ckpt-200", "--outputs", "probs",
                  "--target", "pbtxt", "--pbtxt-refuse", "Softmax", "--tries", "1", "-o", "repro/")
    assert done.returncode == 0, done.stderr + done.stdout
    record = json.loads((folder / "repro" / "model.ckpt-200.pbtxt.reduced.json").read_text())
    assert record["ops"].get("Softmax") == 1 and record["nodes_after"] < record["nodes_before"]
    assert record["stock"]["ran"] and record["stock"]["same"], record["stock"]
    assert "which pbtxt refuses" in record["stock"]["last_line"]


def test_its_version_is_in_the_batch_cache_key(site, samples, tmp_path):
    """The plugin declares no requirements (no cache packages): its own version still keys it;
    upgraded, the next `freeze batch` converts again."""
    mine = tmp_path / "site"
    shutil.copytree(site, mine)
    shutil.copytree(samples / "iris", tmp_path / "iris")
    args = ("batch", "iris", "--outputs", "probs", "--target", "pbtxt", "--cache", "cache")
    first, again = freeze(mine, tmp_path, *args), freeze(mine, tmp_path, *args)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert again.stdout.split()[0] == "cached", again.stdout
    _dist_info(mine, "1.1")
    after = freeze(mine, tmp_path, *args)
    assert after.returncode == 0 and after.stdout.split()[0] == "ok", after.stdout + after.stderr


def test_the_plugin_is_one_folder_and_its_entry_point(site):
    made = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()
                  and "__pycache__" not in p.parts)
    assert made == ["gf_pbtxt-1.0.dist-info/METADATA", "gf_pbtxt-1.0.dist-info/entry_points.txt",
                    "gf_pbtxt/__init__.py", "gf_pbtxt/explorer.py", "gf_pbtxt/export.py",
                    "gf_pbtxt/flags.json", "gf_pbtxt/repro.py", "gf_pbtxt/runtime.py",
                    "gf_pbtxt/targets/pbtxt.toml"]
    places = {p.relative_to(site).parts[0] for p in site.rglob("*") if p.is_file()}
    assert places == {"gf_pbtxt", "gf_pbtxt-1.0.dist-info"}  # its folder + its extra: 2


def test_no_module_outside_a_built_in_format_s_folder_names_it():
    """A built-in format is its folder + its extra too: no graphfreeze module outside the
    folder imports it or compares a format's name with it (explain, reduce, batch's cache and
    the CLI ask the format)."""
    import ast

    root = Path(__file__).resolve().parents[2]
    formats = sorted(p.name for p in (root / "converters" / "formats").iterdir()
                     if (p / "export.py").exists())
    named = []
    for path in [*(root / "converters").rglob("*.py"), *(root / "cli").rglob("*.py")]:
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            module = getattr(node, "module", None) or "" if isinstance(node, ast.ImportFrom) \
                else ""
            for name in formats:
                if f"formats/{name}/" in rel:
                    continue
                if module == f"graphfreeze.formats.{name}" or \
                        module.startswith(f"graphfreeze.formats.{name}.") or (
                        isinstance(node, ast.Compare) and any(
                            isinstance(c, ast.Constant) and c.value == name
                            for c in [node.left, *node.comparators]) and
                        "format" in ast.unparse(node)):
                    named.append(f"{rel}:{node.lineno} names {name}")
    assert not named, "\n".join(named)
