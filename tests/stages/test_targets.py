"""Each export target on real sample checkpoints: written, loadable in its own runtime, verified,
deterministic, and refused clearly when it cannot be made."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

TARGET_FILES = {  # target -> (file written by `-o DIR/` with that single target, format)
    "server": ("model.ckpt-200.savedmodel", "saved_model"),
    "tflite": ("model.ckpt-200.tflite", "tflite"),
    "tflite-fp16": ("model.ckpt-200.tflite-fp16.tflite", "tflite"),
    "tflite-dynamic": ("model.ckpt-200.tflite-dynamic.tflite", "tflite"),
    "edge-int8": ("model.ckpt-200.edge-int8.tflite", "tflite"),
    "edge-int16x8": ("model.ckpt-200.edge-int16x8.tflite", "tflite"),
    "onnx": ("model.ckpt-200.onnx", "onnx"),
}


def tree_bytes(path):
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("target", sorted(TARGET_FILES))
@pytest.mark.parametrize("name", ["iris_resource", "cnn_v2"])
def test_target_writes_a_verified_deterministic_artifact(sample, freeze, tmp_path, target, name):
    model_dir = sample(name)
    outs = []
    for run in ("a", "b"):
        out = tmp_path / run
        result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", target,
                        "-o", f"{out}/")
        assert result.exit_code == 0, result.output
        assert "compared with the original" in result.output
        outs.append(out)
    file, fmt = TARGET_FILES[target]
    first, second = (o / file for o in outs)
    assert tree_bytes(first) == tree_bytes(second), "same input, same bytes"
    sidecar = json.loads((outs[0] / f"{file}.json").read_text())
    assert sidecar["target"] == target and sidecar["format"] == fmt
    check = sidecar["verification"]
    assert check["passed"] and "probs:0" in check["metrics"]
    assert check["metrics"]["probs:0"]["top1_agreement"] >= 0.8
    if target == "server" and name == "cnn_v2":  # its conv kernels are big enough to be variables
        assert sidecar["variables"] > 0 and (first / "variables" / "variables.index").exists()
    if first.is_file():
        assert sidecar["sha256"] == hashlib.sha256(first.read_bytes()).hexdigest()


def test_server_savedmodel_serves_with_user_facing_signature_keys(sample, freeze, tmp_path):
    import tensorflow as tf

    model_dir = sample("iris")
    out = tmp_path / "iris.savedmodel"
    assert freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "server",
                  "-o", out).exit_code == 0
    assert (out / "saved_model.pb").exists() and (out / "variables").is_dir()
    loaded = tf.saved_model.load(str(out), tags=["serve"])
    fn = loaded.signatures["serving_default"]
    assert set(fn.structured_input_signature[1]) == {"x"}
    assert set(fn.structured_outputs) == {"probs"}
    probs = fn(x=tf.constant(np.ones((3, 4), np.float32)))["probs"].numpy()
    assert probs.shape == (3, 3) and np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    android = tmp_path / "iris.pb"
    assert freeze("--ckpt", model_dir, "--outputs", "probs", "-o", android).exit_code == 0
    graph = tf.Graph()
    with graph.as_default():
        graph_def = tf.compat.v1.GraphDef.FromString(android.read_bytes())
        tf.graph_util.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as sess:
        expected = sess.run("probs:0", {"x:0": np.ones((3, 4), np.float32)})
    np.testing.assert_allclose(probs, expected, atol=1e-6)


def test_server_as_text_writes_pbtxt(sample, freeze, tmp_path):
    model_dir = sample("iris")
    out = tmp_path / "m.savedmodel"
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "server", "--as-text",
                    "-o", out)
    assert result.exit_code == 0, result.output
    assert (out / "saved_model.pbtxt").exists() and not (out / "saved_model.pb").exists()
    assert 'key: "serving_default"' in (out / "saved_model.pbtxt").read_text()


def test_many_targets_share_one_load_and_print_one_table(sample, freeze, tmp_path):
    model_dir = sample("cnn_v1")
    tmp_path = tmp_path / "out"
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "android,server",
                    "--target", "tflite,onnx", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["model.ckpt-200.onnx", "model.ckpt-200.onnx.json", "model.ckpt-200.pb",
                     "model.ckpt-200.pb.json", "model.ckpt-200.savedmodel",
                     "model.ckpt-200.savedmodel.json", "model.ckpt-200.tflite",
                     "model.ckpt-200.tflite.json"]
    table = result.output[result.output.index("compared with the original"):]
    for target in ("android", "server", "tflite", "onnx"):
        assert target in table
    diffs = {json.loads((tmp_path / n).read_text())["target"]:
             json.loads((tmp_path / n).read_text())["verification"]["max_abs_diff"]["probs:0"]
             for n in names if n.endswith(".json")}
    assert diffs["android"] <= 1e-5 and diffs["server"] <= 1e-5
    assert diffs["tflite"] <= 1e-4 and diffs["onnx"] <= 1e-4


def test_onnx_model_checks_and_runs_with_sidecar_names(sample, freeze, tmp_path):
    import onnx
    import onnxruntime as ort

    model_dir = sample("iris_partitioned")
    out = tmp_path / "m.onnx"
    assert freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "onnx",
                  "-o", out).exit_code == 0
    onnx.checker.check_model(str(out))
    sidecar = json.loads((tmp_path / "m.onnx.json").read_text())
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == [t["name"] for t in sidecar["inputs"]]
    assert [o.name for o in session.get_outputs()] == [t["name"] for t in sidecar["outputs"]]
    assert sidecar["opset"] >= 13 and sidecar["external_data"] is None


def test_onnx_opset_flag_and_a_flag_no_target_uses(sample, freeze, tmp_path):
    model_dir = sample("iris")
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "onnx", "--opset",
                    "13", "-o", tmp_path / "m.onnx")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "m.onnx.json").read_text())["opset"] == 13
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--opset", "13")
    assert result.exit_code == 6 and "opset applies to no stage of android" in result.output
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "onnx", "--opset", "99",
                    "-o", tmp_path / "n.onnx")
    assert result.exit_code == 6 and "--opset 99" in result.output


def test_large_onnx_weights_go_to_an_external_file(sample, tmp_path):
    from graphfreeze.convert import Request, convert
    from graphfreeze.registry import Registry, parse_target

    registry = Registry.default(plugins=False)
    registry.add_target(parse_target({
        "schema_version": 1, "name": "onnx-small-limit", "description": "onnx, 1 KB in-file",
        "stages": [{"use": "freeze_variables"}, {"use": "strip_training"},
                   {"use": "optimize_for_inference"},
                   {"use": "export_onnx", "external_data_bytes": 1024}, {"use": "verify"}]},
        "test"))
    model_dir = sample("cnn_v2")
    out = tmp_path / "m.onnx"
    (written,) = convert(Request(source=str(model_dir), outputs=("probs",),
                                 targets=("onnx-small-limit",), output=str(out)), registry)
    assert written.sidecar.facts["external_data"] == "m.onnx.data"
    assert written.sidecar.verification["passed"]
    assert (tmp_path / "m.onnx.data").stat().st_size > out.stat().st_size
    import onnxruntime as ort

    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    x = np.zeros((1, *[d for d in session.get_inputs()[0].shape[1:]]), np.float32)
    assert session.run(None, {session.get_inputs()[0].name: x})[0].shape[0] == 1


def test_int8_with_calibration_file_and_without(sample, freeze, tmp_path):
    import tensorflow as tf

    model_dir = sample("iris")
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(3).standard_normal((50, 4)).astype(np.float32))
    out = tmp_path / "m.tflite"
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "edge-int8",
                    "--calibration", calib, "-o", out)
    assert result.exit_code == 0, result.output
    assert "synthetic" not in result.output
    sidecar = json.loads((tmp_path / "m.tflite.json").read_text())
    assert sidecar["calibration"] == str(calib)
    interp = tf.lite.Interpreter(model_path=str(out))
    assert interp.get_input_details()[0]["dtype"] == np.int8
    assert interp.get_output_details()[0]["dtype"] == np.int8
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "edge-int8",
                    "-o", tmp_path / "n.tflite")
    assert result.exit_code == 0 and "warning:" in result.output and "synthetic" in result.output
    bad = tmp_path / "bad.npz"
    np.savez(bad, other=np.zeros((5, 4), np.float32), more=np.zeros((5, 4), np.float32))
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "edge-int8",
                    "--calibration", bad, "-o", tmp_path / "o.tflite")
    assert result.exit_code == 3 and "no array for input 'x' (has: more, other)" in result.output
    assert not (tmp_path / "o.tflite").exists()


def test_ops_tflite_and_onnx_cannot_take_are_named(sample, freeze, tmp_path):
    model_dir = sample("iris_odd_op")
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    result = freeze("--ckpt", model_dir, "--outputs", "flex_only", "--target", "tflite",
                    "-o", tmp_path / "m.tflite")
    assert result.exit_code == 3, result.output
    assert "Cumprod" in result.output and "--allow-tf-ops" in result.output
    result = freeze("--ckpt", model_dir, "--outputs", "flex_only", "--target", "tflite",
                    "--allow-tf-ops", "-o", tmp_path / "m.tflite")
    assert result.exit_code == 5, result.output  # TF's pip Interpreter has no Flex delegate
    assert "so it cannot be verified; nothing written (pass --no-verify" in result.output
    result = freeze("--ckpt", model_dir, "--outputs", "flex_only", "--target", "tflite",
                    "--allow-tf-ops", "--no-verify", "-o", tmp_path / "m.tflite")
    assert result.exit_code == 0, result.output
    result = freeze("--ckpt", model_dir, "--outputs", "odd", "--target", "tflite",
                    "--allow-tf-ops", "-o", tmp_path / "n.tflite")
    assert result.exit_code == 3, result.output
    assert "no kernel for op(s) Igamma, not even with --allow-tf-ops" in result.output
    result = freeze("--ckpt", model_dir, "--outputs", "odd", "--target", "onnx",
                    "-o", tmp_path / "m.onnx")
    assert result.exit_code == 3, result.output
    assert "no ONNX mapping at opset" in result.output and "Igamma" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite", "m.tflite.json"]
    result = freeze("--ckpt", model_dir, "--outputs", "odd,flex_only")  # android takes any TF op
    assert result.exit_code == 0, result.output


def test_onnx_bytes_do_not_depend_on_the_process(sample, tmp_path):
    """tf2onnx walks sets of nodes, so its names depend on hash seeds and memory addresses;
    separate processes with different seeds must still write the same bytes."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    freeze_bin = Path(sys.executable).parent / "freeze"
    model_dir = sample("cnn_v2")
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"m{seed}.onnx"
        subprocess.run([str(freeze_bin), "--ckpt", str(model_dir), "--outputs", "probs",
                        "--target", "onnx", "-o", str(out)], check=True, capture_output=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_a_quantizing_flag_on_a_float_target_is_one_line(sample):
    """`freeze` in the model's folder: --io-type and --calibration on a float tflite are refused
    before any work (exit 6), naming the flag, nothing written; with edge-int8 beside it the
    flag is taken and the int8 file has uint8 inputs."""
    import subprocess
    import sys

    folder = sample("iris")
    command = [sys.executable, "-m", "graphfreeze_cli.main", "--ckpt", "model.ckpt-200",
               "--outputs", "probs"]
    for flags in (["--io-type", "uint8"], ["--calibration", "none.npz"]):
        done = subprocess.run([*command, "--target", "tflite", *flags], cwd=folder,
                              capture_output=True, text=True)
        assert done.returncode == 6, done.stderr
        assert done.stderr.strip() == f"error: option {flags[0]} applies to no stage of tflite"
    assert not list(folder.glob("*.tflite*"))
    done = subprocess.run([*command, "--target", "tflite,edge-int8", "--io-type", "uint8",
                           "-o", "out/"], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sidecar = json.loads(next((folder / "out").glob("*int8*.json")).read_text())
    assert {t["dtype"] for t in sidecar["tflite_io"]["inputs"].values()} == {"uint8"}
