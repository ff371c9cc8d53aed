"""A third-party plugin package, installed for real (a dist-info with entry points on sys.path),
adds a model source kind, an artifact format (its export stage and gaps) and a target using it.
`freeze`, `freeze inspect` and `freeze targets` use them with no change to the CLI or the
built-ins."""

from __future__ import annotations

import importlib
import json
import sys
import zipfile

import pytest

PLUGIN = '''
"""gf_acme: a graphfreeze plugin. Source `acme_zip`: a `.gfgraph` zip holding a frozen GraphDef
(graph.pb) and io.json naming its inputs and outputs. Target `acme`: the usual freeze, strip and
optimize, then a zip of the graph and the list of its ops, verified."""

import dataclasses
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass

from graphfreeze.io import storage
from graphfreeze.errors import InputError
from graphfreeze.plugins import Format, OpGaps, Session, Source, Stage
from graphfreeze.sources.frozen import FrozenModel
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos

UNSUPPORTED = {"Softmax", "Igamma"}  # what the acme runtime cannot take


class AcmeModel(FrozenModel):
    kind = "acme_zip"


@dataclass(frozen=True)
class AcmeOptions:
    use_manifest: bool = True  # inputs and outputs from io.json (else the user names them)


def _read(path):
    from tensorflow.core.framework import graph_pb2

    try:
        with zipfile.ZipFile(io.BytesIO(storage.read_bytes(path))) as z:
            graph_def = graph_pb2.GraphDef.FromString(z.read("graph.pb"))
            manifest = json.loads(z.read("io.json"))
    except (zipfile.BadZipFile, KeyError) as err:
        raise InputError(f"{path}: not an acme graph zip ({err})") from err
    return graph_def, manifest


class AcmeZipSource(Source):
    name = "acme_zip"
    summary = "acme graph zip (.gfgraph: graph.pb + io.json)"
    flag = None
    options = AcmeOptions
    order = 50

    def detect(self, path):
        return path.endswith(".gfgraph") and storage.exists(path)

    def stem(self, path, options):
        return path[:-len(".gfgraph")] if path.endswith(".gfgraph") else path + ".acme"

    def load(self, path, options, unsafe):
        graph_def, manifest = _read(path)
        if not options.use_manifest:
            return AcmeModel(path, path + "!graph.pb", graph_def)
        return AcmeModel(path, path + "!graph.pb", graph_def, manifest["inputs"],
                         manifest["outputs"])

    def describe(self, path, options, unsafe):
        from graphfreeze.sources.describe import graph_tensors, total_size
        from graphfreeze.graph.graphdefs import op_counts
        from graphfreeze.names import TensorRef

        graph_def, manifest = _read(path)
        inputs = [{"key": n, **t} for n, t in zip(manifest["inputs"], graph_tensors(
            graph_def, [TensorRef(n) for n in manifest["inputs"]]))]
        outputs = [{"key": n, **t} for n, t in zip(manifest["outputs"], graph_tensors(
            graph_def, [TensorRef(n) for n in manifest["outputs"]]))]
        return {"size_bytes": total_size([path]), "variables": [],
                "signatures": [{"key": "acme_manifest", "inputs": inputs, "outputs": outputs}],
                "inputs": inputs, "outputs": outputs, "flags": {},
                "op_counts": op_counts(graph_def), "graph": graph_def,
                "gap_outputs": manifest["outputs"], "acme": {"members": ["graph.pb", "io.json"]}}


@dataclass(frozen=True)
class ExportOptions:
    compress: bool = True


class ZipSession(Session):
    """The acme runtime: runs the graph as written into the zip."""

    def __init__(self, path, inputs, outputs):
        self.path, self.inputs, self.outputs = path, inputs, outputs

    def run(self, feeds):
        from graphfreeze.graph.session import run_graph_def
        from tensorflow.core.framework import graph_pb2

        with zipfile.ZipFile(io.BytesIO(storage.read_bytes(self.path))) as z:
            written = graph_pb2.GraphDef.FromString(z.read("graph.pb"))
        return run_graph_def(written, {i.name: feeds[i.name] for i in self.inputs},
                             [o.name for o in self.outputs])


def open_zip(path, inputs, outputs, **options):
    return ZipSession(path, inputs, outputs)


def export(state, options):
    from graphfreeze.graph.graphdefs import op_counts

    ops = op_counts(state.graph_def)
    graph_bytes = state.graph_def.SerializeToString(deterministic=True)
    buffer = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if options.compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method) as z:
        for name, data in (("graph.pb", graph_bytes),
                           ("ops.txt", "".join(f"{op} {n}\\n" for op, n in sorted(ops.items())))):
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    data = buffer.getvalue()
    staged = state.files.put(state.output_path, data)
    inputs, outputs = io_infos(state)

    artifact = Artifact(path=state.output_path, sha256=hashlib.sha256(data).hexdigest(),
                        size=len(data), format=acme_format(), inputs=inputs, outputs=outputs,
                        staged=staged,
                        facts={"node_count": len(state.graph_def.node), "acme_ops": len(ops)},
                        summary=(f"acme: {len(ops)} ops listed",))
    return dataclasses.replace(state, artifact=artifact)


def gaps(graph_def, ops):
    missing = sorted(ops & UNSUPPORTED)
    return OpGaps("acme", missing, "acme runtime: " + (", ".join(missing) or "all ops run"),
                  {"runtime": "acme-1"})


def acme_format():
    stage = Stage("acme_export", export, "graph", "artifact", ExportOptions,
                  "zip of the graph and its op list", suffix=".acme.zip")
    return Format("acme", stage, open=open_zip, gaps=gaps, requires=("zipfile",))


TARGET = {
    "schema_version": 1, "name": "acme", "description": "graph zip for the acme runtime",
    "stages": [{"use": "freeze_variables"}, {"use": "strip_training"},
               {"use": "optimize_for_inference"}, {"use": "acme_export"},
               {"use": "verify", "tolerance": 1e-5}],
}
'''

ENTRY_POINTS = """\
[graphfreeze.sources]
acme_zip = gf_acme:AcmeZipSource

[graphfreeze.formats]
acme = gf_acme:acme_format

[graphfreeze.targets]
acme = gf_acme:TARGET
"""


@pytest.fixture(scope="module")
def acme(tmp_path_factory):
    """The plugin installed: gf_acme.py plus gf_acme-1.0.dist-info (METADATA, entry points)."""
    site = tmp_path_factory.mktemp("site")
    (site / "gf_acme.py").write_text(PLUGIN)
    info = site / "gf_acme-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gf-acme\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))
        importlib.invalidate_caches()
        yield site
    sys.modules.pop("gf_acme", None)
    importlib.invalidate_caches()


@pytest.fixture
def gfgraph(other_samples, tmp_path):
    """A .gfgraph made of models/other_sources.py's frozen.pb (input x, output probs, a
    keep_prob dropout flag)."""
    path = tmp_path / "dense.gfgraph"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("graph.pb", (other_samples / "frozen.pb").read_bytes())
        z.writestr("io.json", json.dumps({"inputs": ["x"], "outputs": ["probs"]}))
    return path


def test_the_cli_and_the_builtins_are_untouched_by_the_plugin():
    from graphfreeze.registry import Registry

    registry = Registry.default(plugins=False)
    assert "acme" not in registry.target_names() and "acme_zip" not in registry.names("source")


def table_rows(text: str) -> list[list[str]]:
    """A rich table's rows as lists of cell texts, wrapped lines joined."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0]:
            rows.append(cells)
        else:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
    return rows


def test_freeze_targets_lists_the_plugin_target_and_source(acme, freeze):
    result = freeze("targets")
    assert result.exit_code == 0, result.output
    at, end = result.output.index("model sources"), result.output.index("stages (what")
    targets = {row[0]: row for row in table_rows(result.output[:at])}
    sources = [row for row in table_rows(result.output[at:end])]
    stages = {row[0]: row for row in table_rows(result.output[end:result.output.index("graph passes")])}
    assert stages["acme_export"][1:3] == ["zip of the graph and its op list", ".acme.zip"]
    assert stages["acme_export"][3].startswith("gf-acme (gf_acme:")  # the plugin's format
    name, description, stages, provider = targets["acme"]
    assert description == "graph zip for the acme runtime"
    assert stages.endswith("acme_export → verify") and provider == "gf-acme (gf_acme:TARGET)"
    assert targets["android"][3] == "graphfreeze"
    assert [row[0] for row in sources] == ["checkpoint", "saved_model", "keras", "frozen_graph",
                                           "acme_zip"]  # detected after the built-ins
    name, what, flag, provider = sources[-1]
    assert what == "acme graph zip (.gfgraph: graph.pb + io.json)" and flag == ""
    assert provider.startswith("gf-acme (gf_acme:")


def test_freeze_converts_the_plugin_source_with_the_plugin_target(acme, gfgraph, freeze):
    result = freeze(gfgraph, "--target", "acme,android")
    assert result.exit_code == 0, result.output
    out = gfgraph.with_name("dense.acme.zip")
    assert f"acme: wrote {out}" in result.output
    assert "input   x:0" in result.output and "output  probs:0" in result.output
    car = json.loads(out.with_name("dense.acme.zip.json").read_text())
    ops = car["acme_ops"]
    assert f"  acme: {ops} ops listed" in result.output
    assert car["format"] == "acme" and car["target"] == "acme"
    assert car["source"]["kind"] == "acme_zip" and car["source"]["graph"].endswith("!graph.pb")
    assert car["verification"]["passed"] and car["verification"]["max_abs_diff"]["probs:0"] <= 1e-5
    assert car["flags_folded"] == {"keep_prob": 1.0}
    with zipfile.ZipFile(out) as z:
        listed = z.read("ops.txt").decode().splitlines()
        graph_bytes = z.read("graph.pb")
    assert len(listed) == ops and any(line.startswith("Softmax ") for line in listed)
    assert not any(line.startswith(("Identity ", "RandomUniform ")) for line in listed), \
        "the plugin's export got the stripped graph"
    from tensorflow.core.framework import graph_pb2

    android = gfgraph.with_name("dense.pb")  # a built-in target on the plugin's source
    nodes = {n.name: n for n in graph_pb2.GraphDef.FromString(graph_bytes).node}
    assert nodes == {n.name: n for n in graph_pb2.GraphDef.FromString(android.read_bytes()).node}
    table = result.output[result.output.index("compared with the original"):]
    assert "acme" in table and "android" in table


def test_the_plugin_source_takes_its_own_typed_option(acme, gfgraph, freeze):
    result = freeze(gfgraph, "--target", "acme", "--source-option", "use_manifest=false")
    assert result.exit_code == 3, result.output
    assert "no --outputs given" in result.output and "likely outputs: probs" in result.output
    result = freeze(gfgraph, "--target", "acme", "--source-option", "use_manifest=false",
                    "--outputs", "probs", "-o", gfgraph.with_name("named.zip"))
    assert result.exit_code == 0, result.output
    assert gfgraph.with_name("named.zip").exists()
    result = freeze(gfgraph, "--target", "acme", "--source-option", "use_manifest=yes")
    assert result.exit_code == 6, result.output
    assert "acme_zip source: option use_manifest must be true or false, got 'yes'" in result.output
    result = freeze(gfgraph, "--target", "acme", "--source-option", "use_manifst=false")
    assert result.exit_code == 6 and "use_manifst is not taken by any source kind" in result.output
    assert "use_manifest" in result.output


def test_the_plugin_kind_named_with_kind(acme, gfgraph, freeze):
    renamed = gfgraph.with_name("graph.zip")
    renamed.write_bytes(gfgraph.read_bytes())
    result = freeze("inspect", renamed, "--json")
    assert result.exit_code == 3 and "not a model graphfreeze knows" in result.output
    assert "acme graph zip (.gfgraph: graph.pb + io.json)" in result.output  # in what is expected
    result = freeze("inspect", renamed, "--kind", "acme_zip", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["kind"] == "acme_zip"


def test_freeze_inspect_uses_the_plugin_source_and_prints_its_gaps(acme, gfgraph, freeze):
    result = freeze("inspect", gfgraph)
    assert result.exit_code == 0, result.output
    assert f"{gfgraph}: acme zip," in result.output
    assert "signature acme_manifest: x=x:0 -> probs=probs:0" in result.output  # its describe
    assert "acme runtime: Softmax" in result.output  # the plugin stage's gaps line
    assert "onnx (opset" in result.output and "tflite builtins:" in result.output
    report = json.loads(freeze("inspect", gfgraph, "--json").output)
    assert report["kind"] == "acme_zip" and report["acme"] == {"members": ["graph.pb", "io.json"]}
    assert report["targets"]["acme"] == {"unsupported": ["Softmax"], "runtime": "acme-1",
                                         "summary": "acme runtime: Softmax"}


def test_the_plugin_loads_only_when_used(acme):
    from graphfreeze.registry import Registry

    sys.modules.pop("gf_acme", None)
    registry = Registry.default()
    assert "acme" in registry.target_names() and "acme_zip" in registry.names("source")
    assert "gf_acme" not in sys.modules
    assert registry.provider("target", "acme") == "gf-acme (gf_acme:TARGET)"
    registry.target("android")
    assert "gf_acme" not in sys.modules
