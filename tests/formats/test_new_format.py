"""Adding a format is its folder (export, runtime, targets) and one entry point in its own
package: a plugin package installed for real in a temporary folder (a dist-info on
PYTHONPATH) gives the `pbtxt` format, and the `freeze` command, run in the model's folder,
converts to its target, verifies, benchmarks and explains it, and `freeze verify` reads it back,
with no change to graphfreeze."""

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

from graphfreeze.io.trees import artifact_digest
from graphfreeze.plugins import Format, Stage
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos
from gf_pbtxt.runtime import open_pbtxt


def run(state, options):
    from google.protobuf import text_format

    staged = state.files.put(state.output_path, text_format.MessageToString(state.graph_def).encode())
    inputs, outputs = io_infos(state)
    sha256, size = artifact_digest([staged])
    artifact = Artifact(path=state.output_path, sha256=sha256, size=size, format=FORMAT,
                        inputs=inputs, outputs=outputs, staged=staged,
                        facts={"node_count": len(state.graph_def.node)})
    return dataclasses.replace(state, artifact=artifact)


STAGE = Stage("export_pbtxt", run, "graph", "artifact", summary="text GraphDef", suffix=".pbtxt")
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
    (folder / "targets" / "pbtxt.toml").write_text(TARGET)
    info = site / "gf_pbtxt-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gf-pbtxt\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[graphfreeze.formats]\npbtxt = gf_pbtxt:FORMAT\n")
    return site


def freeze(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([str(Path(sys.executable).with_name("freeze")), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def test_a_format_added_as_a_folder_converts_verifies_and_reads_back(site, samples, tmp_path):
    folder = tmp_path / "iris"
    shutil.copytree(samples / "iris", folder)
    listed = freeze(site, folder, "targets")
    assert listed.returncode == 0 and "pbtxt" in listed.stdout and "export_pbtxt" in listed.stdout
    done = freeze(site, folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target",
                  "pbtxt", "--save-golden", "golden", "--benchmark", "--benchmark-runs", "3",
                  "--explain")
    assert done.returncode == 0, done.stderr + done.stdout
    car = json.loads((folder / "model.ckpt-200.pbtxt.json").read_text())
    assert car["format"] == "pbtxt" and car["verification"]["passed"]
    assert car["latency"]["runtime"] == "TensorFlow (text GraphDef)"
    assert car["verification"]["divergence"]["available"] is True
    assert car["verification"]["divergence"]["compared"] > 0
    again = freeze(site, folder, "verify", "model.ckpt-200.pbtxt", "--golden", "golden")
    assert again.returncode == 0 and "passed against the golden inputs in golden" in again.stdout


def test_the_plugin_is_one_folder_and_its_entry_point(site):
    made = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()
                  and "__pycache__" not in p.parts)
    assert made == ["gf_pbtxt-1.0.dist-info/METADATA", "gf_pbtxt-1.0.dist-info/entry_points.txt",
                    "gf_pbtxt/__init__.py", "gf_pbtxt/export.py", "gf_pbtxt/runtime.py",
                    "gf_pbtxt/targets/pbtxt.toml"]
