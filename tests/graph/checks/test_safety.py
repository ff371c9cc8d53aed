"""graph/safety.py on real graphs: the op list against TensorFlow's registry, refusals, cuts,
function bodies, and SavedModel assets."""

from __future__ import annotations

import os
import subprocess

import pytest
import tensorflow as tf
from graphfreeze.errors import InputError
from graphfreeze.graph.checks import safety, saved_model_safety
from graphfreeze.sources.checkpoint import read_meta_graph
from graphfreeze.sources.frozen import read_graph_def
from graphfreeze.sources.saved_model import read_saved_model_proto

v1 = tf.compat.v1


@pytest.fixture
def hostile(hostile_models):
    return hostile_models


def test_data_file_matches_live_registry():
    assert safety.host_ops() == safety.derive_host_ops()


def test_classification():
    ops = safety.host_ops()
    for op in ("ReadFile", "WriteFile", "MatchingFiles", "PrintV2", "SaveV2", "RestoreV2",
               "MergeV2Checkpoints", "PyFunc", "EagerPyFunc", "ImmutableConst",
               "TFRecordDataset", "InitializeTableFromTextFileV2", "DebugIdentityV2",
               "CreateSummaryFileWriter", "WriteScalarSummary", "DataServiceDataset"):
        assert op in ops, op
    for op in ("MatMul", "Conv2D", "Relu", "Softmax", "AddV2", "Const", "Placeholder", "Assert",
               "Print", "RegexReplace", "StringJoin", "ShardedFilename", "ReadVariableOp",
               "VarHandleOp", "StatefulPartitionedCall", "FusedBatchNormV3", "ScalarSummary"):
        assert op not in ops, op
    assert ops["WriteFile"] == "writes files" and ops["ReadFile"] == "reads files"
    assert ops["PyFunc"] == "runs Python code"


def test_print_to_stderr_is_harmless(build):
    graph_def = build(lambda: (tf.print("a", name="err"),
                               tf.print("b", output_stream="file:///x", name="file")))
    by_name = {n.name: n for n in graph_def.node}
    assert safety.host_use(by_name["err"]) is None
    assert safety.host_use(by_name["file"]) == "prints to a file"


@pytest.mark.parametrize("model,node,op", [("ckpt_read", "read", "ReadFile"),
                                           ("ckpt_glob", "glob", "MatchingFiles")])
def test_needed_host_op_refused(hostile, model, node, op):
    meta = read_meta_graph(str(hostile / "models" / model / "model.ckpt-1.meta"))
    safety.check_graph(meta.graph_def, ["probs"], "m.meta")  # `probs` does not need it
    with pytest.raises(InputError) as err:
        safety.check_graph(meta.graph_def, ["probs", "leak"], "m.meta")
    line = str(err.value)
    assert line.startswith(f"m.meta: node '{node}' ({op}) reads files;") and "--unsafe" in line
    assert "\n" not in line


def test_frozen_graph_refused(hostile):
    graph_def = read_graph_def(str(hostile / "models" / "frozen_read.pb"))
    with pytest.raises(InputError, match=r"node 'read' \(ReadFile\) reads files"):
        safety.check_graph(graph_def, ["leak"], "frozen_read.pb")


@pytest.mark.parametrize("model,node,what", [("ckpt_write", "write", "writes files"),
                                             ("ckpt_save", "steal", "writes files"),
                                             ("ckpt_print", "print", "prints to a file")])
def test_control_only_host_op_cut(hostile, model, node, what):
    meta = read_meta_graph(str(hostile / "models" / model / "model.ckpt-1.meta"))
    graph_def, warnings = safety.check_graph(meta.graph_def, ["probs"], "m.meta")
    assert len(warnings) == 1 and f"'{node}'" in warnings[0] and what in warnings[0]
    names = {n.name for n in graph_def.node}
    assert node not in names and "save/restore_all" in names  # the saver subgraph stays
    probs = next(n for n in graph_def.node if n.name == "probs")
    assert all(i.lstrip("^") in names for i in probs.input)
    assert meta.graph_def.node and any(n.name == node for n in meta.graph_def.node)  # untouched


def test_clean_graph_unchanged(build):
    graph_def = build(lambda: tf.nn.relu(v1.placeholder(tf.float32, [2]), name="out"))
    assert safety.check_graph(graph_def, ["out"], "g.pb") == (graph_def, [])


def _nested(target: str, control: bool):
    @tf.function
    def inner(x):
        tf.io.write_file(os.path.join(target, "nested.txt"), tf.strings.as_string(x[0]))
        return x * 2.0

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        if control:
            with tf.control_dependencies([outer(x)]):
                tf.identity(x, name="out")
        else:
            tf.identity(outer(x), name="out")
    return graph.as_graph_def()


def test_nested_function_body_refused(tmp_path):
    with pytest.raises(InputError) as err:
        safety.check_graph(_nested(str(tmp_path), control=False), ["out"], "g.pb")
    line = str(err.value)
    assert "(WriteFile) writes files in function '" in line and "inner" in line
    assert "called by node 'StatefulPartitionedCall'" in line and "--unsafe" in line


def test_control_only_call_cut(tmp_path):
    graph_def, warnings = safety.check_graph(_nested(str(tmp_path), control=True), ["out"], "g")
    assert len(warnings) == 1 and "WriteFile" not in {n.op for n in graph_def.node}
    assert "StatefulPartitionedCall" not in {n.name for n in graph_def.node}


def _meta(path):
    return read_saved_model_proto(str(path)).meta_graphs[0]


def test_saved_model_function_refused(hostile):
    path = hostile / "models" / "sm_write"
    with pytest.raises(InputError, match=r"node '.*' \(WriteFile\) writes files in function"):
        saved_model_safety.check_saved_model(_meta(path), str(path), str(path))


def test_saved_model_asset_outside_refused(hostile):
    path = hostile / "models" / "sm_asset"
    with pytest.raises(InputError, match=r"asset '../../outside_secret.txt' resolves outside"):
        saved_model_safety.check_saved_model(_meta(path), str(path), str(path))


def test_clean_saved_models_pass(other_samples):
    for name in ("tf2_savedmodel", "tf1_savedmodel"):
        path = other_samples / name
        saved_model_safety.check_saved_model(_meta(path), str(path), str(path))


@pytest.fixture(scope="module")
def asset_model(tmp_path_factory):
    """A SavedModel with a real asset: (its dir, the asset's filename)."""
    out = tmp_path_factory.mktemp("asset")
    vocab = out / "vocab.txt"
    vocab.write_text("a\nb\n")
    module = tf.Module()
    module.asset = tf.saved_model.Asset(str(vocab))
    module.f = tf.function(lambda: tf.constant(1.0), input_signature=[])
    tf.saved_model.save(module, str(out / "model"), signatures=module.f)
    return out / "model", "vocab.txt"


def test_asset_inside_passes(asset_model):
    path, _ = asset_model
    saved_model_safety.check_assets(_meta(path), str(path), "m")


@pytest.mark.parametrize("name", ["/etc/hostname", "../x.txt", "a/../../x", "gs://b/x"])
def test_asset_names_outside_refused(asset_model, name):
    path, _ = asset_model
    meta = _meta(path)
    meta.asset_file_def[0].filename = name
    with pytest.raises(InputError, match="resolves outside the model directory"):
        saved_model_safety.check_assets(meta, str(path), "m")


def test_asset_symlink_outside_refused(asset_model, tmp_path):
    path, name = asset_model
    copy = tmp_path / "model"
    subprocess.run(["cp", "-r", str(path), str(copy)], check=True)
    (copy / "assets" / name).unlink()
    (copy / "assets" / name).symlink_to(tmp_path / "elsewhere.txt")
    with pytest.raises(InputError, match="resolves outside"):
        saved_model_safety.check_assets(_meta(copy), str(copy), "m")
