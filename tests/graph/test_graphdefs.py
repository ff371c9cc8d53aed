"""Helpers every pass uses: free names, rewiring."""

from __future__ import annotations

import time

from graphfreeze.graph.graphdefs import free_name, rewire
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
