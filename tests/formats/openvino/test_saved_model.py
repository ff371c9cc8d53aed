"""A SavedModel to openvino, read by OpenVINO's frontend itself: through the `freeze` command in
the model's folder, no TensorFlow in the command's own process (verification's original runs
in its child; none with --no-verify), the inputs and outputs the full route names, verified;
the full route where the graph has training work to strip or OpenVINO's reading fails."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("openvino")

READ = "read from the SavedModel folder by OpenVINO's TensorFlow frontend"
TF1_OPS = {"Constant": 1, "MatMul": 1, "Parameter": 1, "Result": 1, "Softmax": 1}


def _copy(root, name, tmp_path):
    shutil.copytree(root / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(("fixture", "name"), [
    ("source_cases", "tf1_savedmodel"), ("source_cases", "two_inputs_savedmodel"),
    ("keras_layers", "keras3_savedmodel")])  # (tf_keras: tests/e2e/test_wheel.py)
def test_read_by_openvino_without_tensorflow_here(request, tmp_path, freeze_noted, fixture,
                                                  name):
    folder = _copy(request.getfixturevalue(fixture), name, tmp_path)
    done, noted = freeze_noted(folder, name, "--target", "openvino")
    assert done.returncode == 0, done.stderr
    assert noted == {"tensorflow": False, "children": 1, "python_in_child": False}  # C API
    assert READ in done.stdout
    car = json.loads((folder / f"{name}.xml.json").read_text())
    assert car["openvino_read"] == "the SavedModel folder" and "node_count" not in car
    assert car["verification"]["passed"] and car["source"]["kind"] == "saved_model"
    outputs = ",".join(o["node"] for o in car["outputs"])
    done, noted = freeze_noted(folder, name, "--target", "openvino", "--outputs", outputs,
                               "-o", "full/")  # the full route: frozen in TensorFlow here
    assert done.returncode == 0 and noted["tensorflow"], done.stderr
    full = json.loads((folder / f"full/{name}.xml.json").read_text())
    assert "openvino_read" not in full and full["node_count"] > 0
    assert (car["inputs"], car["outputs"]) == (full["inputs"], full["outputs"])
    if name == "tf1_savedmodel":  # what OpenVINO makes of both is the same
        assert car["openvino_op_counts"] == full["openvino_op_counts"] == TF1_OPS


def test_no_verify_starts_no_child(source_cases, tmp_path, freeze_noted):
    folder = _copy(source_cases, "tf1_savedmodel", tmp_path)
    done, noted = freeze_noted(folder, "tf1_savedmodel", "--target", "openvino", "--no-verify")
    assert done.returncode == 0, done.stderr
    assert noted == {"tensorflow": False, "children": 0, "python_in_child": False}
    assert "verification" not in json.loads((folder / "tf1_savedmodel.xml.json").read_text())


@pytest.mark.parametrize("name", ["tf1_savedmodel", "tf2_savedmodel"])
def test_training_work_takes_the_full_route(other_samples, tmp_path, freeze_noted, name):
    """Training work to strip: tf1_savedmodel's dropout on a keep_prob that defaults to 1,
    tf2_savedmodel's cond whose training branch runs dropout. Frozen and stripped first."""
    folder = _copy(other_samples, name, tmp_path)
    done, noted = freeze_noted(folder, name, "--target", "openvino")
    assert done.returncode == 0 and noted["tensorflow"], done.stderr
    car = json.loads((folder / f"{name}.xml.json").read_text())
    assert "openvino_read" not in car and car["verification"]["passed"]
    assert "RandomUniform" not in car["openvino_op_counts"]


@pytest.mark.parametrize(("name", "outputs"), [("v1_cond_savedmodel", ["out:0"]),
                                              ("alias_savedmodel", ["a:0", "b:0"])])
def test_a_reading_that_fails_takes_the_full_route(source_cases, tmp_path, freeze_noted, name,
                                                   outputs):
    """OpenVINO names v1_cond_savedmodel's output after the cond's tensor, not `out`, and gives
    alias_savedmodel's `a` and `b` (one tensor) one port: the IR of the frozen graph instead,
    verified as before."""
    folder = _copy(source_cases, name, tmp_path)
    done, _ = freeze_noted(folder, name, "--target", "openvino")
    assert done.returncode == 0, done.stderr
    car = json.loads((folder / f"{name}.xml.json").read_text())
    assert "openvino_read" not in car and [o["name"] for o in car["outputs"]] == outputs
    assert car["verification"]["passed"] and READ not in done.stdout


def test_an_op_openvino_lacks_is_the_full_routes_one_line(source_cases, tmp_path, freeze_noted):
    folder = _copy(source_cases, "digamma_savedmodel", tmp_path)
    done, _ = freeze_noted(folder, "digamma_savedmodel", "--target", "openvino")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 3 and len(lines) == 1, done.stderr
    assert "OpenVINO cannot convert op(s) Digamma (node Digamma (Digamma))" in lines[0]
    assert sorted(p.name for p in folder.iterdir()) == ["digamma_savedmodel"]


def test_a_reference_that_dies_takes_the_full_route(source_cases, tmp_path, monkeypatch):
    """What a killed TensorFlow child raises (RuntimeError, not one of ours) on the direct
    route: the full route runs instead, not an internal error. (TensorFlow imported here: no
    child, so the reference runs in this process, where it is made to die.)"""
    import tensorflow  # noqa: F401
    from graphfreeze.convert import Request, convert
    from graphfreeze.sources.saved_model_interface import SignatureModel

    def died(self, graph_def, feeds, fetches):
        raise RuntimeError("the TensorFlow child process ended (exit -9)")

    monkeypatch.setattr(SignatureModel, "run_reference", died)
    folder = _copy(source_cases, "tf1_savedmodel", tmp_path)
    (written,) = convert(Request(str(folder / "tf1_savedmodel"), targets=("openvino",)))
    assert written.sidecar.verification["passed"]
    assert "openvino_read" not in written.sidecar.facts


@pytest.mark.parametrize("source", ["tf1_savedmodel", "cnn_v2"])
def test_an_output_name_without_xml_is_taken_on_both_routes(source_cases, samples, tmp_path,
                                                             freeze_noted, source):
    """`-o ir` (no `.xml`): OpenVINO writes only to `.xml` names but reads any, so the IR is
    `ir` with `ir.bin` beside it, from the direct route (a SavedModel) and the full route (a
    checkpoint, in its own folder), verified by reading it back."""
    import openvino as ov

    if source == "cnn_v2":
        folder = shutil.copytree(samples / "cnn_v2", tmp_path / "cnn_v2")
        args = ["--ckpt", "model.ckpt-200", "--outputs", "probs"]
    else:
        folder, args = _copy(source_cases, source, tmp_path), [source]
    done, _ = freeze_noted(folder, *args, "--target", "openvino", "-o", "ir")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.glob("ir*")) == ["ir", "ir.bin", "ir.json"]
    assert json.loads((folder / "ir.json").read_text())["verification"]["passed"]
    assert ov.Core().read_model(str(folder / "ir")).outputs
