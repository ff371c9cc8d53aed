"""graphfreeze as users install it, end to end: .venv-wheel holds what action.yml's install step
installs (pip builds the wheel from the checkout; every extra), and its `freeze` runs in a
model's folder with relative paths, without PYTHONPATH, outside the checkout: the headline
command, every built-in target in one run, `freeze verify --golden`, inspect and scan.
`freeze batch` with it: test_wheel_ci.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.installs import ROOT, WHEEL, builtin_targets, missing, run

WHY = missing(WHEEL / ".installed", ".venv-wheel", "action.yml")
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))
FREEZE = WHEEL / "bin" / "freeze"
LISTED = builtin_targets()
# every target a plain name runs on a checkpoint: a parameter's target (npu-<vendor>:<soc>) needs
# its vendor's SDK; the language-model targets (litert-lm, onnx-lm: verified by generation) take
# a keras-hub causal LM (test_a_language_model_generates)
TARGETS = {name: t for name, t in LISTED.items() if "parameter" not in t and
           not any(s["use"] == "verify_generation" for s in t["stages"])}
# the web targets' npm runtimes, where `make web` put them (a user of the wheel names theirs)
WEB = {"GRAPHFREEZE_WEB_RUNTIMES": str(ROOT / "web" / "node_modules")}


def freeze(*args, cwd: Path, timeout: float = 300):
    return run(FREEZE, *args, cwd=cwd, timeout=timeout, COLUMNS="200", **WEB)


def test_graphfreeze_is_the_installed_wheel(tmp_path):
    code = ("import importlib.metadata as m, importlib.util as u, json, sys, sysconfig\n"
            "import graphfreeze, graphfreeze_cli\n"
            "d = m.distribution('graphfreeze')\n"
            "print(json.dumps({'files': [graphfreeze.__file__, graphfreeze_cli.__file__],\n"
            "  'purelib': sysconfig.get_paths()['purelib'], 'path': sys.path,\n"
            "  'url': json.loads(d.read_text('direct_url.json') or '{}'),\n"
            "  'extras': {e: bool(u.find_spec(e)) for e in sys.argv[1:]}}))")
    extras = ["tf2onnx", "onnx", "onnxruntime", "tensorflow_model_optimization", "ai_edge_litert",
              "openvino", "openvino_tokenizers", "ray", "keras_hub", "ai_edge_quantizer"]
    done = run(WHEEL / "bin" / "python", "-c", code, *extras, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    site = Path(found["purelib"])
    assert site.is_relative_to(WHEEL) and site.name == "site-packages", site
    assert [Path(f).relative_to(site) for f in found["files"]] == [
        Path("graphfreeze/__init__.py"), Path("graphfreeze_cli/__init__.py")]
    on_path = [Path(p).resolve() for p in found["path"] if p]
    assert not [p for p in on_path if p.is_relative_to(ROOT) and not p.is_relative_to(WHEEL)]
    assert not found["url"].get("dir_info", {}).get("editable"), found["url"]
    assert not [p for p in site.glob("*.pth") if str(ROOT) in p.read_text()]  # no path hook back
    assert found["extras"] == dict.fromkeys(extras, True)


@pytest.fixture(scope="module")
def iris(samples, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel") / "iris"
    shutil.copytree(samples / "iris", folder)
    return folder


def sidecar(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".json").read_text())


def test_the_headline_command(iris):
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", cwd=iris)
    assert done.returncode == 0, done.stderr
    assert "android: wrote model.ckpt-200.pb" in done.stdout
    facts = sidecar(iris / "model.ckpt-200.pb")
    assert facts["target"] == "android" and facts["verification"]["passed"] is True


@pytest.mark.parametrize(("fixture", "name", "cwd", "args", "artifact"), [
    ("samples", "cnn_v2", "cnn_v2", ("--ckpt", "model.ckpt-200", "--outputs", "probs"),
     "cnn_v2/model.ckpt-200.pb"),
    ("keras_layers", "tf_keras_savedmodel", ".", ("tf_keras_savedmodel", "--target", "openvino"),
     "tf_keras_savedmodel.xml")])
def test_tensorflow_in_a_child_only(request, tmp_path, fixture, name, cwd, args, artifact):
    """Neither a Keras checkpoint to android (cnn_v2: BatchNorm conds, If branches), typed in
    its folder, nor a SavedModel folder to openvino (read by OpenVINO's frontend) needs
    TensorFlow in freeze's own process: the installed package's TensorFlow child verifies,
    through TensorFlow's C API (the wheel's `graph/c_library` finds the venv's library), its
    Python API not imported there either."""
    shutil.copytree(request.getfixturevalue(fixture) / name, tmp_path / name)
    code = ("import sys, atexit\n"
            "atexit.register(lambda: print('TF here:', 'tensorflow' in sys.modules))\n"
            "from graphfreeze.process import tensorflow_child as tc\n"
            "stop = tc.stop\n"
            "def stopped(memo):\n"
            "    if isinstance(memo.get(tc.KEY), tc.Child):\n"
            "        print('TF in child:', memo[tc.KEY].submit(tc.python_imported).result(60))\n"
            "    stop(memo)\n"
            "tc.stop = stopped\n"
            "from graphfreeze_cli.main import main\n"
            "sys.argv[0] = 'freeze'\n"
            "main()\n")
    done = run(WHEEL / "bin" / "python", "-c", code, *args, cwd=tmp_path / cwd, COLUMNS="200")
    assert done.returncode == 0, done.stderr
    assert "TF here: False" in done.stdout and "TF in child: False" in done.stdout
    assert sidecar(tmp_path / artifact)["verification"]["passed"] is True


def test_weights_held_apart_from_the_graph(wide, tmp_path):
    """A checkpoint whose frozen weights are held apart from the GraphDef (graph/weights.py, 44 MB
    of them), to android and server in one run from its folder: both verify against the original,
    and the android graph carries every weight and no trace of the marker; without verification
    (the meta graph let go as soon as the graph is cut) the same bytes; that graph as a frozen-graph
    source (its weights held apart as the file is read), to android and onnx, verified, android
    the same bytes again."""
    folder = Path(shutil.copytree(wide, tmp_path / "wide"))
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "android,server",
                  "-o", "out/", cwd=folder)
    assert done.returncode == 0, done.stderr
    graph = (folder / "out" / "model.ckpt-200.pb").read_bytes()
    assert len(graph) > 40 * 2**20 and b"_graphfreeze_weight" not in graph
    for artifact in ("model.ckpt-200.pb", "model.ckpt-200.savedmodel"):
        assert sidecar(folder / "out" / artifact)["verification"]["passed"] is True, artifact
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--no-verify", "-o", "nv.pb",
                  cwd=folder)
    assert done.returncode == 0, done.stderr
    assert (folder / "nv.pb").read_bytes() == graph
    # that frozen graph as a source: its big Consts held apart as the file is read
    done = freeze("model.ckpt-200.pb", "--outputs", "probs", "--target", "android,onnx",
                  "-o", "again/", cwd=folder / "out")
    assert done.returncode == 0, done.stderr
    for artifact in ("model.ckpt-200.optimized.pb", "model.ckpt-200.optimized.onnx"):
        assert sidecar(folder / "out" / "again" / artifact)["verification"]["passed"] is True
    assert (folder / "out" / "again" / "model.ckpt-200.optimized.pb").read_bytes() == graph


def test_freeze_targets_lists_every_builtin_target(iris):
    done = freeze("targets", cwd=iris)
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("model sources")[0]  # the first table: targets
    listed = {line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│")}
    assert listed - {""} == set(LISTED)


@pytest.fixture(scope="module")
def converted(iris) -> Path:
    """One run to every built-in target, into out/, with golden outputs kept in golden/."""
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", ",".join(TARGETS),
                  "-o", "out/", "--save-golden", "golden", cwd=iris)
    assert done.returncode == 0, done.stderr
    return iris


def test_an_npu_target_without_its_sdk_is_one_line(iris):
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target",
                  "npu-qualcomm:SM8650", "-o", "npu/", cwd=iris)
    assert done.returncode == 6, done.stderr
    assert "-m pip install '" in done.stderr and "[npu-qualcomm]'" in done.stderr  # as installed
    assert len(done.stderr.strip().splitlines()) == 1 and not (iris / "npu").exists()


def test_a_lookup_table_to_openvino_and_int8(family, tmp_path):
    """The installed extras' paths for strings and tables: openvino-tokenizers (the `openvino`
    extra) and int8 calibrated in LiteRT, in the model's folder."""
    path, _ = family("tf1_table_savedmodel")
    folder = tmp_path / "table"
    shutil.copytree(path.parent, folder)
    done = freeze(path.name, "--target", "openvino,edge-int8", "-o", "out/", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    openvino = sidecar(folder / "out" / f"{path.name}.xml")
    int8 = sidecar(folder / "out" / f"{path.name}.edge-int8.tflite")
    assert openvino["verification"]["passed"] and int8["verification"]["passed"]
    assert openvino["op_libraries"] == ["openvino-tokenizers"] and int8["quantize"] == "int8"


def test_every_target_in_one_run(converted):
    written = {}
    for path in (converted / "out").glob("*.json"):
        facts = json.loads(path.read_text())
        written[facts["target"]] = facts
        assert path.with_suffix("").exists(), path
        assert facts["verification"]["passed"] is True, (path.name, facts["verification"])
    assert set(written) == set(TARGETS)
    assert (converted / "golden" / "golden.npz").exists()


def _exporter(target: dict) -> str:
    return next(s["use"] for s in target["stages"] if s["use"].startswith("export_"))


# one target per format (by its export stage), named from the target TOMLs
BY_FORMAT = {_exporter(t): name for name, t in sorted(TARGETS.items(), reverse=True)}


@pytest.mark.parametrize("target", sorted(BY_FORMAT.values()))
def test_verify_against_the_golden_outputs(converted, target):
    (artifact,) = [p.with_suffix("").name for p in (converted / "out").glob("*.json")
                   if json.loads(p.read_text())["target"] == target]
    done = freeze("verify", f"out/{artifact}", "--golden", "golden", cwd=converted)
    assert done.returncode == 0, done.stderr
    assert f"({target}): passed against the golden inputs in golden" in done.stdout


def test_inspect_checks_every_format(iris):
    done = freeze("inspect", "model.ckpt-200", "--json", cwd=iris)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["kind"] == "checkpoint" and report["outputs"][0]["name"] == "probs:0"
    assert {"onnx", "openvino", "tflite"} <= set(report["targets"])
    for name, check in report["targets"].items():
        assert check["unsupported"] == [] and "skipped" not in check["summary"], (name, check)


def test_scan(iris, hostile_models):
    hostile = hostile_models / "models" / "ckpt_write"  # WriteFile: from the wheel's host_ops.json
    done = freeze("scan", ".", hostile, "--json", cwd=iris)
    assert done.returncode == 3, done.stderr
    clean, found = json.loads(done.stdout)["files"]
    assert clean["path"] == "." and clean["ok"] is True and clean["kind"] == "checkpoint"
    assert found["ok"] is False and "WriteFile" in json.dumps(found["findings"]), found


def test_a_language_model_generates(causal_lms, tmp_path):
    """The llm extra as installed: a keras-hub GPT-2's .keras to litert-lm-int8, verified by the
    tokens it generates, then `freeze generate` on it, in the model's folder."""
    folder = tmp_path / "gpt2"
    folder.mkdir()
    shutil.copy(causal_lms / "gpt2" / "model.keras", folder)
    done = freeze("model.keras", "--target", "litert-lm-int8", "--prefill-lengths", "8",
                  "--max-cache-len", "24", "--max-new-tokens", "8", cwd=folder, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    check = sidecar(folder / "model.litert-lm-int8.tflite")["verification"]
    assert check["passed"] and check["token_agreement"] >= 0.5, check
    made = freeze("generate", "model.litert-lm-int8.tflite", "--prompt-ids", "3,4,5",
                  "--max-new-tokens", "8", "--json", cwd=folder)
    assert made.returncode == 0, made.stderr[-3000:]
    assert len(json.loads(made.stdout)["tokens"]) == 8
