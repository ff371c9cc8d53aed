"""SavedModels (TF1, TF2), Keras files (.keras, .h5, tfmot-wrapped) and frozen graphs: each
freezes through the same pipeline, named as the user knows it, matching its source."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.e2e.test_freeze_cli import load_graph, run_frozen

MODELS_DIR = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "models")


def sidecar_of(path):
    return json.loads(path.with_name(path.name + ".json").read_text())


@pytest.mark.parametrize("name,flag,inputs,outputs", [
    ("tf2_savedmodel", "--saved-model", ["inputs:0"], ["classes:0", "probabilities:0"]),
    ("tf1_savedmodel", "--saved-model", ["image:0"], ["probabilities:0"]),
    ("model.keras", "--keras", ["image:0"], ["probabilities:0"]),
    ("model.h5", "--keras", ["image:0"], ["probabilities:0"]),
    ("pruned.h5", "--keras", ["image:0"], ["probabilities:0"]),
    ("clustered.h5", "--keras", ["image:0"], ["probabilities:0"]),
    ("qat.h5", "--keras", ["image:0"], ["probabilities:0"]),
])
def test_models_freeze_with_the_names_the_user_knows(other, freeze, tmp_path, name, flag,
                                                     inputs, outputs):
    model = other(name)
    out = tmp_path / "out.pb"
    for args in ((str(model),), (flag, str(model))):  # detected, and named explicitly
        result = freeze(*args, "-o", out, "--force")
        assert result.exit_code == 0, result.output
    car = sidecar_of(out)
    assert [t["name"] for t in car["inputs"]] == inputs
    assert [t["name"] for t in car["outputs"]] == outputs
    assert car["verification"]["passed"]
    assert all(d <= 1e-5 for d in car["verification"]["max_abs_diff"].values())
    graph_def = load_graph(out)
    ops = {n.op for n in graph_def.node}
    assert not ops & {"If", "StatelessIf", "Switch", "Merge", "VarHandleOp", "ReadVariableOp",
                      "StatefulPartitionedCall", "PartitionedCall"}, ops
    assert not any("Random" in op for op in ops)


def test_tfmot_wrappers_are_stripped(other, freeze, tmp_path):
    for name, what in (("pruned.h5", "pruning"), ("clustered.h5", "clustering")):
        out = tmp_path / f"{name}.pb"
        assert freeze(other(name), "-o", out).exit_code == 0
        car = sidecar_of(out)
        assert car["source"]["stripped"] == [what]
        assert not any("prune" in n.name.lower() or "cluster" in n.name.lower()
                       for n in load_graph(out).node if n.op not in ("Const",))


def test_tf2_savedmodel_output_matches_its_signature(other, freeze, tmp_path):
    model = other("tf2_savedmodel")
    out = tmp_path / "m.pb"
    assert freeze(model, "-o", out).exit_code == 0
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    fn = tf.saved_model.load(str(model)).signatures["serving_default"]
    want = fn(inputs=tf.constant(x))
    probs, classes = run_frozen(out, {"inputs:0": x}, ["probabilities:0", "classes:0"])
    np.testing.assert_allclose(probs, want["probabilities"].numpy(), atol=1e-6)
    np.testing.assert_array_equal(classes, want["classes"].numpy())


def test_frozen_graph_is_reoptimized_smaller(other, freeze, tmp_path):
    model = other("frozen.pb")
    before = load_graph(model)
    result = freeze(model, "--outputs", "probs")
    assert result.exit_code == 0, result.output
    out = model.with_name("frozen.optimized.pb")
    after = load_graph(out)
    assert len(after.node) < len(before.node)
    assert not {n.op for n in after.node} & {"Identity", "RandomUniform", "Floor"}
    assert sidecar_of(out)["flags_folded"] == {"keep_prob": 1.0}


def test_signature_and_tag_flags(other, freeze, tmp_path):
    model = other("tf1_savedmodel")
    result = freeze(model, "--signature", "predict", "-o", tmp_path / "a.pb")
    assert result.exit_code == 3
    assert "no signature 'predict'" in result.output and "serving_default" in result.output
    result = freeze(model, "--tag", "train", "-o", tmp_path / "b.pb")
    assert result.exit_code == 3
    assert "no meta graph tagged 'train'" in result.output and "serve" in result.output


def test_keras_custom_objects_and_safe_mode(other, freeze, tmp_path):
    custom = other("custom.keras")
    result = freeze(custom, "-o", tmp_path / "c.pb")
    assert result.exit_code == 3, result.output
    assert "Scale" in result.output and "--custom-objects" in result.output
    sys.path.insert(0, MODELS_DIR)
    try:
        result = freeze(custom, "--custom-objects", "other_sources:Scale", "-o", tmp_path / "c.pb")
    finally:
        sys.path.remove(MODELS_DIR)
    assert result.exit_code == 0, result.output
    lam = other("lambda.h5")
    result = freeze(lam, "-o", tmp_path / "l.pb")
    assert result.exit_code == 3 and "Lambda" in result.output and "--unsafe" in result.output
    assert not (tmp_path / "l.pb").exists()
    result = freeze(lam, "--unsafe", "-o", tmp_path / "l.pb")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("make,message", [
    (lambda d: (d / "empty").mkdir() or d / "empty", "a directory holding no model"),
    (lambda d: (d / "sm" / "variables").mkdir(parents=True) or d / "sm", "no saved_model.pb"),
    (lambda d: (d / "junk.pb").write_bytes(np.random.default_rng(0).bytes(2000)) and
     d / "junk.pb", "junk.pb: "),
    (lambda d: (d / "notes.txt").write_text("hello") and d / "notes.txt",
     "not a model graphfreeze knows"),
])
def test_paths_that_are_no_model(freeze, tmp_path, make, message):
    path = make(tmp_path)
    result = freeze(path, "--outputs", "probs")
    assert result.exit_code == 3, result.output
    assert message in result.output
    assert result.output.count("\n") == 1, "one line"


def test_truncated_frozen_graph(other, freeze, tmp_path):
    model = other("frozen.pb")
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    result = freeze(model, "--outputs", "probs")
    assert result.exit_code == 3 and "frozen.pb" in result.output
    assert "truncated" in result.output


def test_remote_ram_paths_for_source_and_output(sample, freeze):
    model_dir = sample("iris")
    for path in model_dir.iterdir():
        with tf.io.gfile.GFile(f"ram://in/{path.name}", "wb") as f:
            f.write(path.read_bytes())
    result = freeze("--ckpt", "ram://in/model.ckpt-200", "--outputs", "probs",
                    "--target", "android,onnx", "-o", "ram://out/nested/")
    assert result.exit_code == 0, result.output
    assert tf.io.gfile.exists("ram://out/nested/model.ckpt-200.pb")
    assert tf.io.gfile.exists("ram://out/nested/model.ckpt-200.onnx.json")


def test_savedmodel_and_keras_from_ram_paths(other, freeze):
    saved = other("tf2_savedmodel")
    for path in saved.rglob("*"):
        if path.is_file():
            target = f"ram://sm/{path.relative_to(saved).as_posix()}"
            tf.io.gfile.makedirs(target.rsplit("/", 1)[0])
            with tf.io.gfile.GFile(target, "wb") as f:
                f.write(path.read_bytes())
    with tf.io.gfile.GFile("ram://k/model.keras", "wb") as f:
        f.write(other("model.keras").read_bytes())
    for source, out in (("ram://sm", "ram://o/sm.pb"), ("ram://k/model.keras", "ram://o/k.tflite")):
        result = freeze(source, "-o", out, "--target", "tflite" if out.endswith("tflite") else
                        "android")
        assert result.exit_code == 0, result.output
        assert tf.io.gfile.exists(out) and tf.io.gfile.exists(out + ".json")
    result = freeze("inspect", "ram://sm", "--json")
    assert result.exit_code == 0 and '"kind": "saved_model"' in result.output


@pytest.mark.parametrize("damage,message", [
    (lambda data: data[300:], "not a Keras .keras archive"),  # zipfile: OSError on a bad seek
    (lambda data: None, "the model config is not a JSON object"),
])
def test_broken_keras_archives(other, freeze, damage, message):
    """Fuzzing found: a .keras zip with shifted offsets was an internal error (OSError)."""
    import zipfile

    model = other("model.keras")
    data = damage(model.read_bytes())
    if data is None:  # a well-formed zip whose config.json is JSON but not an object
        with zipfile.ZipFile(model) as archive:
            members = {n: archive.read(n) for n in archive.namelist()}
        members["config.json"] = b"[1, 2]"
        with zipfile.ZipFile(model, "w") as archive:
            for name, member in members.items():
                archive.writestr(name, member)
    else:
        model.write_bytes(data)
    result = freeze("--keras", model)
    assert result.exit_code == 3, result.output
    assert result.output.count("\n") == 1 and "model.keras: " in result.output
    assert message in result.output


def test_keras_model_named_by_a_number(other, freeze):
    """Fuzzing found: an .h5 config whose model name is a number loads, then tracing it raised
    a TypeError (exit 1) in convert and in inspect: Keras never writes one, the file is
    corrupt (said when the config is read, not as a failure to trace)."""
    import h5py

    model = other("model.h5")
    with h5py.File(model, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        config["config"]["name"] = 1000
        f.attrs["model_config"] = json.dumps(config)
    for command in (["--keras", model], ["inspect", model]):
        result = freeze(*command)
        assert result.exit_code == 3, result.output
        assert result.output.count("\n") == 1, result.output
        assert "model.h5: a Functional in the model config is named 1000, not a string; the " \
            "file is corrupt" in result.output, result.output


@pytest.mark.parametrize("index", ["x", 7, -1])
def test_h5_inbound_node_no_layer_call_makes(other, freeze, index):
    """Fuzzing found: tf_keras retries a functional model's layers until every inbound node
    resolves, so a node index none can satisfy hung `freeze` forever."""
    import h5py

    model = other("model.h5")
    with h5py.File(model, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        layer = next(la for la in config["config"]["layers"] if la["inbound_nodes"])
        layer["inbound_nodes"][0][0][1] = index
        f.attrs["model_config"] = json.dumps(config)
    result = freeze("--keras", model)
    assert result.exit_code == 3, result.output
    assert result.output.count("\n") == 1, result.output
    assert f"model.h5: layer '{layer['name']}' reads" in result.output
    assert "which no layer call makes" in result.output


def test_savedmodel_tensorflow_cannot_freeze(other, freeze, tmp_path):
    """Fuzzing found: a TF1 SavedModel whose restore op lost an input loads, then freezing its
    signature raised a shape ValueError (exit 1)."""
    from tensorflow.core.protobuf import saved_model_pb2

    path = other("tf1_savedmodel")
    model = saved_model_pb2.SavedModel()
    model.ParseFromString((path / "saved_model.pb").read_bytes())
    node = next(n for n in model.meta_graphs[0].graph_def.node if n.name == "save/restore_shard")
    del node.input[1]
    (path / "saved_model.pb").write_bytes(model.SerializeToString())
    result = freeze("--saved-model", path, "-o", tmp_path / "out.pb")
    assert result.exit_code == 3, result.output
    assert result.output.count("\n") == 1, result.output
    assert "saved_model.pb: variable dense/kernel:0 holds a value of shape [0]" in result.output
    assert "the file is corrupt" in result.output
    assert not (tmp_path / "out.pb").exists()
