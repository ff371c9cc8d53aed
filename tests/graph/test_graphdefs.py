"""Helpers every pass uses: free names, rewiring, cuts."""

from __future__ import annotations

import time

from graphfreeze.graph.graphdefs import extract, free_name, rewire
from graphfreeze.proto.tf import graph_pb2


def test_free_name_skips_taken_names_and_claims_its_own():
    taken = {"x", "x_1"}
    assert free_name("x", taken) == "x_2"
    assert free_name("x", taken) == "x_3"
    assert free_name("y", taken) == "y"
    assert {"x_2", "x_3", "y"} <= taken


def _identity_chain(n: int):
    """x -> id0 -> ... -> id{n-1}, an AddN reading every link, a node waiting on every link."""
    graph = graph_pb2.GraphDef()
    graph.node.add(name="x", op="Placeholder")
    for i in range(n):
        graph.node.add(name=f"id{i}", op="Identity", input=[f"id{i - 1}" if i else "x"])
    graph.node.add(name="sum", op="AddN", input=[f"id{i}" for i in range(n)])
    graph.node.add(name="wait", op="NoOp", input=[f"^id{i}" for i in range(n)] + ["^x"])
    return graph


def test_rewire_follows_each_chain_to_its_end_and_keeps_each_control_once():
    graph = _identity_chain(4)
    mapping = {f"id{i}": f"id{i - 1}" if i else "x" for i in range(4)}
    out = {n.name: list(n.input) for n in rewire(graph, mapping, {f"id{i}" for i in range(4)}).node}
    assert out == {"x": [], "sum": ["x"] * 4, "wait": ["^x"]}


def test_rewire_grows_with_the_graph():
    """8x the links of an Identity chain each read by one node (a chain followed from scratch
    per reader was quadratic: 50x), and 8x the control inputs on one node."""
    def cpu(n: int) -> float:
        graph = _identity_chain(n)
        mapping = {f"id{i}": f"id{i - 1}" if i else "x" for i in range(n)}
        start = time.process_time()
        rewire(graph, mapping, {f"id{i}" for i in range(n)}, owned=True)
        return time.process_time() - start

    cpu(100)
    ratio = min(cpu(16_000) for _ in range(2)) / max(min(cpu(2_000) for _ in range(3)), 1e-3)
    assert ratio < 20, ratio


def test_scopes_are_every_enclosing_name_scope():
    from graphfreeze.graph.graphdefs import scopes

    assert scopes(["a/b/c", "a/b/d", "x", "a/e"]) == {"a", "a/b"}


def _colocated_graph():
    """`y` reads `IteratorGetNext`, colocated with the dataset node `Dataset` it does not read
    (an Estimator's input pipeline), and with `x`, which it does."""
    graph = graph_pb2.GraphDef()
    for name, op in (("Dataset", "Const"), ("x", "Const"), ("IteratorGetNext", "Identity"),
                     ("y", "Identity")):
        node = graph.node.add(name=name, op=op)
        if op == "Const":
            node.attr["dtype"].type = 1
            node.attr["value"].tensor.dtype = 1
            node.attr["value"].tensor.float_val.append(1.0)
        else:
            node.attr["T"].type = 1
    graph.node[2].input.append("x")
    graph.node[2].attr["_class"].list.s.extend([b"loc:@Dataset", b"loc:@x"])
    graph.node[3].input.append("IteratorGetNext")
    graph.node[3].attr["_class"].list.s.append(b"loc:@Dataset")
    return graph


def test_a_cut_drops_colocations_with_the_nodes_it_drops():
    import tensorflow as tf

    graph = _colocated_graph()
    for owned in (False, True):
        cut = extract(graph if not owned else type(graph).FromString(graph.SerializeToString()),
                      ["y"], owned=owned)
        nodes = {n.name: n for n in cut.node}
        assert sorted(nodes) == ["IteratorGetNext", "x", "y"]
        assert list(nodes["IteratorGetNext"].attr["_class"].list.s) == [b"loc:@x"]
        assert not nodes["y"].attr["_class"].list.s
        with tf.Graph().as_default():
            tf.graph_util.import_graph_def(cut, name="")  # imports: nothing names a lost node
    assert list(graph.node[3].attr["_class"].list.s) == [b"loc:@Dataset"]  # the caller's kept
