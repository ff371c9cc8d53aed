"""Where graph/shapes fails in a way it does not mean (a bug of ours), the run does not: the
import check and the shapes are left to TensorFlow, which answers as before."""

from __future__ import annotations

from graphfreeze.graph.checks.validate_values import check_import, checked_here
from graphfreeze.graph.shapes import context
from graphfreeze.names import TensorRef
from graphfreeze.proto.tf import graph_pb2
from graphfreeze.tensors import tensor_infos


def test_a_failing_shape_function_leaves_the_graph_to_tensorflow(other_samples, monkeypatch):
    graph_def = graph_pb2.GraphDef.FromString((other_samples / "frozen.pb").read_bytes())
    refs = [TensorRef("x", 0), TensorRef("probs", 0)]
    assert checked_here(graph_def, "frozen.pb")
    here = tensor_infos(graph_def, refs)

    def broken(c):
        raise KeyError("a bug")

    monkeypatch.setitem(context.FUNCTIONS, "Softmax", broken)
    assert not checked_here(graph_def, "frozen.pb")
    check_import(graph_def, "frozen.pb")  # TensorFlow's check passes
    assert tensor_infos(graph_def, refs) == here  # TensorFlow's shapes, the same
    assert [i.shape for i in here] == [(None, 4), (None, 3)]
