"""A function body read without TensorFlow is TensorFlow's function_def_to_graph_def's."""

import pytest
from graphfreeze.graph.function_bodies import body_nodes
from graphfreeze.sources.checkpoint import CheckpointModel
from tensorflow.python.framework import function_def_to_graph


def test_every_function_of_a_keras_checkpoint(samples):
    graph_def = CheckpointModel(str(samples / "cnn_v2" / "model.ckpt-200")).graph_def
    library = {f.signature.name: f for f in graph_def.library.function}
    assert len(library) > 10
    for fdef in library.values():
        nodes, flat = body_nodes(fdef, library)
        body, theirs = function_def_to_graph.function_def_to_graph_def(fdef)
        args = {a.name for a in fdef.signature.input_arg}
        assert [n.SerializeToString(deterministic=True) for n in nodes] == \
            [n.SerializeToString(deterministic=True) for n in body.node if n.name not in args]
        assert flat == theirs


def test_an_unknown_op_is_named(samples):
    graph_def = CheckpointModel(str(samples / "cnn_v2" / "model.ckpt-200")).graph_def
    fdef = graph_def.library.function[0]
    fdef.node_def[0].op = "NoSuchOp"
    with pytest.raises(ValueError, match=f"op NoSuchOp of node {fdef.node_def[0].name}"):
        body_nodes(fdef, {})
