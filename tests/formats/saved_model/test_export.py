"""export_saved_model called directly on a real frozen and stripped sample graph (no CLI)."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.formats.saved_model import export as saved_model
from graphfreeze.formats.saved_model.export import SavedModelOptions, variables_graph
from graphfreeze.formats.saved_model.runtime import signature_key
from graphfreeze.graph.skeleton import is_big_const, run_frozen
from graphfreeze.graph.weights import is_held
from graphfreeze.names import TensorRef
from graphfreeze.tensors import sample_inputs

from tests.formats.tflite.test_export import export, graph_state


@pytest.fixture(scope="module")
def cnn(samples):
    return graph_state(samples / "cnn_v2")


def test_variables_graph_turns_big_consts_into_resource_variables(cnn):
    from graphfreeze.graph.consts import tensor_array

    before = {n.name: type(n).FromString(n.SerializeToString()) for n in cnn.graph_def.node}
    big = sorted(n for n, node in before.items() if is_big_const(node))
    assert big, "cnn_v2's dense kernel (512x5) is a big constant"
    graph_def, weights = variables_graph(cnn.graph_def, cnn.weights)  # (held apart by the freeze)
    assert sorted(weights) == big
    after = {n.name: n for n in graph_def.node}
    for name in big:
        read, handle = after[name], after[f"{name}/variable"]
        assert read.op == "ReadVariableOp" and list(read.input) == [f"{name}/variable"]
        assert handle.op == "VarHandleOp" and handle.attr["shared_name"].s == \
            f"{name}/variable".encode()
        tensor = before[name].attr["value"].tensor
        assert handle.attr["dtype"].type == read.attr["dtype"].type == tensor.dtype
        assert handle.attr["shape"].shape == tensor.tensor_shape
        held = cnn.weights.value(before[name]) if is_held(before[name]) else tensor_array(tensor)
        assert weights[name] is held or np.array_equal(weights[name], held)
    for name, node in before.items():  # everything else, and every consumer, as it was
        if name not in weights:
            assert after[name] == node
    assert list(cnn.graph_def.node) == list(before.values())  # (its input untouched)
    assert len(graph_def.node) == len(cnn.graph_def.node) + len(big)
    assert graph_def.versions == cnn.graph_def.versions


def test_variables_graph_picks_a_free_handle_name():
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    w = graph_def.node.add(name="w", op="Const")
    w.attr["dtype"].type = 1
    w.attr["value"].tensor.dtype = 1
    w.attr["value"].tensor.tensor_shape.dim.add().size = 2048
    w.attr["value"].tensor.tensor_content = np.ones(2048, np.float32).tobytes()
    graph_def.node.add(name="w/variable", op="NoOp")
    small = graph_def.node.add(name="axis", op="Const")
    small.attr["value"].tensor.tensor_shape.dim.add().size = 3
    out, weights = variables_graph(graph_def)
    assert list(weights) == ["w"]
    assert {n.name: n.op for n in out.node} == {"w/variable_1": "VarHandleOp",
                                                "w": "ReadVariableOp", "w/variable": "NoOp",
                                                "axis": "Const"}


def test_signature_keys_are_the_names_a_client_uses():
    assert signature_key(TensorRef("probs")) == "probs"
    assert signature_key(TensorRef("split", 1)) == "split_1"
    assert signature_key(TensorRef("scope/out", 0)) == "scope/out"


def test_export_writes_a_servable_savedmodel(cnn, tmp_path):
    import tensorflow as tf

    path = tmp_path / "cnn.savedmodel"
    done, txn = export(cnn, saved_model.run, SavedModelOptions(), path, "server")
    with txn:
        artifact = done.artifact
        assert artifact.format.name == "saved_model"
        assert artifact.facts["signature_inputs"] == {"images": "images:0"}
        assert artifact.facts["signature_outputs"] == {"probs": "probs:0"}
        assert artifact.facts["variables"] == 1 and artifact.facts["tags"] == ["serve"]
        assert artifact.summary == ("signature serving_default: inputs images; outputs probs",)
        feeds = sample_inputs(artifact.inputs, 3, seed=5)
        (got,) = artifact.open().run(feeds)  # tf.saved_model.load of the staged directory
        (want,) = run_frozen(cnn.graph_def, feeds, ["probs:0"], cnn.weights)
        np.testing.assert_allclose(got, want, atol=1e-6)
        assert not path.exists()
        txn.commit()
    assert sorted(p.name for p in path.iterdir()) == ["saved_model.pb", "variables"]
    assert (path / "variables" / "variables.index").exists()
    loaded = tf.saved_model.load(str(path), tags=["serve"])
    fn = loaded.signatures["serving_default"]
    assert set(fn.structured_input_signature[1]) == {"images"}
    assert set(fn.structured_outputs) == {"probs"}
    np.testing.assert_allclose(fn(images=tf.constant(feeds["images:0"]))["probs"].numpy(), want,
                               atol=1e-6)
    reader = tf.train.load_checkpoint(str(path / "variables" / "variables"))
    (name,) = [n for n in {n.name for n in cnn.graph_def.node} if n in reader.get_variable_to_shape_map()]
    assert reader.get_variable_to_shape_map()[name] == [512, 5]


def test_as_text_writes_a_pbtxt_with_the_signature(cnn, tmp_path):
    path = tmp_path / "t.savedmodel"
    done, txn = export(cnn, saved_model.run, SavedModelOptions(as_text=True), path, "server")
    with txn:
        txn.commit()
    text = (path / "saved_model.pbtxt").read_text()
    assert 'key: "serving_default"' in text and 'op: "VarHandleOp"' in text
    assert not (path / "saved_model.pb").exists()
    assert done.artifact.size == sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
