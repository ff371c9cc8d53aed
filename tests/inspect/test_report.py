"""`freeze inspect` on what graphfreeze writes (a .tflite, an .onnx, an OpenVINO .xml), typed as a
user types it in the model's folder: the format, inputs and outputs, ops and the sidecar's record,
read by each format's own runtime tools (Format.describe)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FREEZE = str(Path(sys.executable).with_name("freeze"))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
ARTIFACTS = {"model.ckpt-200.edge-int8.tflite": ("tflite", "int8", "FULLY_CONNECTED"),
             "model.ckpt-200.onnx": ("onnx", "float32", "MatMul"),
             "model.ckpt-200.xml": ("openvino", "float32", "MatMul")}


def freeze(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FREEZE, *args], cwd=folder, capture_output=True, text=True, env=ENV,
                          timeout=600)


@pytest.fixture(scope="module")
def written(samples, tmp_path_factory):
    folder = tmp_path_factory.mktemp("inspect") / "iris"
    import shutil

    shutil.copytree(samples / "iris", folder)
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target",
                  "edge-int8,onnx,openvino", "-o", "out/", "--save-golden", "golden")
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize("name", sorted(ARTIFACTS))
def test_inspect_describes_an_artifact_with_its_sidecar(written, name):
    fmt, dtype, op = ARTIFACTS[name]
    done = freeze(written, "inspect", f"out/{name}", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["kind"], report["format"]) == ("artifact", fmt)
    assert report["size_bytes"] > 0 and report["op_counts"][op] >= 1
    (given,), (probs,) = report["inputs"], report["outputs"]
    assert given["dtype"] == dtype and given["shape"][-1] == 4 and probs["shape"][-1] == 3
    car = json.loads((written / "out" / f"{name}.json").read_text())
    assert report["sidecar"]["target"] == car["target"] and report["golden"] == "golden"
    text = freeze(written, "inspect", f"out/{name}")
    assert text.returncode == 0, text.stderr
    assert f"{fmt} artifact" in text.stdout and f"sidecar: target {car['target']}" in text.stdout
    assert "verified: passed" in text.stdout and "not a model graphfreeze knows" not in text.stderr


def test_inspect_of_a_file_no_format_reads_still_says_what_it_expects(written):
    (written / "notes.txt").write_text("hello")
    done = freeze(written, "inspect", "notes.txt")
    assert done.returncode == 3 and "not a model graphfreeze knows" in done.stderr, done.stderr


@pytest.mark.parametrize("name,fmt", [("model.ckpt-200.edge-int8.tflite", "tflite"),
                                      ("model.ckpt-200.onnx", "onnx"),
                                      ("model.ckpt-200.xml", "openvino")])
def test_inspect_of_a_damaged_artifact_is_one_line_naming_it(written, name, fmt):
    data = (written / "out" / name).read_bytes()
    head = data[:data.index(b">", data.index(b"<net")) + 1] if fmt == "openvino" else data[:8]
    for damaged, content in (("cut", data[:len(data) // 2]), ("garbage", head + b"x" * 64)):
        copy = f"{damaged}-{name}"
        (written / copy).write_bytes(content)
        done = freeze(written, "inspect", copy)
        assert done.returncode == 3, done.stderr
        assert done.stderr.startswith(f"error: {copy}: not a readable {fmt} artifact (")
        assert done.stderr.rstrip().endswith("convert the model again")
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_inspect_of_an_onnx_with_an_unknown_element_type_shows_its_code(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph)
    model.graph.input[0].type.tensor_type.elem_type = 99  # a newer onnx's type
    onnx.save(model, tmp_path / "new.onnx")
    done = freeze(tmp_path, "inspect", "new.onnx", "--json")
    assert done.returncode == 0, done.stderr
    (given,) = json.loads(done.stdout)["inputs"]
    assert given["dtype"] == "elem_type 99"
