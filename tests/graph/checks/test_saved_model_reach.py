"""saved_model_safety refuses only what loading or serving may run: a TF1 SavedModel's unused
training Saver passes; the same host op hooked to a signature or an init op is refused."""

from __future__ import annotations

import pytest
import tensorflow as tf
from graphfreeze.errors import InputError
from graphfreeze.graph.checks.saved_model_safety import check_saved_model
from graphfreeze.sources.saved_model import read_saved_model_proto


@pytest.fixture
def meta(zoo):
    path, _ = zoo("training_saver_savedmodel")
    return read_saved_model_proto(str(path)).meta_graphs[0], str(path)


def _hook(meta_graph_def) -> str:
    """A WriteFile node (with its Const inputs) added to the graph, hanging off nothing."""
    graph = meta_graph_def.graph_def
    for name, value in (("hook/name", b"out.txt"), ("hook/data", b"pwned")):
        node = graph.node.add(name=name, op="Const")
        node.attr["dtype"].type = tf.string.as_datatype_enum
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
    graph.node.add(name="hook", op="WriteFile", input=["hook/name", "hook/data"])
    return "hook"


def test_unused_training_saver_passes(meta):
    meta_graph_def, path = meta
    assert any(n.op == "SaveV2" and n.name.startswith("training_saver/")
               for n in meta_graph_def.graph_def.node)
    check_saved_model(meta_graph_def, path, path)
    _hook(meta_graph_def)  # nothing runs it either
    check_saved_model(meta_graph_def, path, path)


def test_host_op_a_signature_needs_is_refused(meta):
    meta_graph_def, path = meta
    hook = _hook(meta_graph_def)
    probs = next(n for n in meta_graph_def.graph_def.node if n.name == "probs")
    probs.input.append("^" + hook)
    with pytest.raises(InputError, match=r"node 'hook' \(WriteFile\) writes files"):
        check_saved_model(meta_graph_def, path, path)


def test_host_op_the_init_op_runs_is_refused(meta):
    meta_graph_def, path = meta
    hook = _hook(meta_graph_def)
    meta_graph_def.collection_def["legacy_init_op"].node_list.value.append(hook)
    with pytest.raises(InputError, match=r"node 'hook' \(WriteFile\)"):
        check_saved_model(meta_graph_def, path, path)


def test_without_signatures_every_node_is_checked(meta):
    """A checkpoint's meta graph names no outputs: the training Saver's SaveV2 is refused."""
    meta_graph_def, path = meta
    meta_graph_def.ClearField("signature_def")
    with pytest.raises(InputError, match=r"training_saver/SaveV2' \(SaveV2\) writes files"):
        check_saved_model(meta_graph_def, path, path)
