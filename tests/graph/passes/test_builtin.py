"""The pass driver: a pass says whether it changed the graph (attributes alone included), and a
plugin's pass returning a bare GraphDef still runs, judged by its nodes' names, ops and inputs."""

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.graph.graphdefs import copied, extract, op_counts, rewire
from graphfreeze.graph.passes.builtin import (
    builtin_passes,
    optimize_for_inference,
    run_passes,
    strip_training,
)
from graphfreeze.plugins import GraphPass, PassResult

v1 = tf.compat.v1


def model():
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    mid = tf.identity(x, name="mid")
    tf.multiply(mid, 2.0, name="y")


def drop_marked(graph_def, context):
    """Drops the nodes marked `_drop` (listed first: it acts only in the round after `mark`)."""
    marked = {n.name: n.input[0] for n in graph_def.node if "_drop" in n.attr}
    if not marked:
        return PassResult(graph_def, False)
    return PassResult(extract(rewire(graph_def, marked, drop=set(marked)), context.keep), True)


def mark(says: bool):
    """A pass that edits one attribute only: a PassResult saying so, or (`says` False) a bare
    GraphDef, as a plugin written before PassResult returns."""

    def run(graph_def, context):
        out = graph_def if context.owned else copied(graph_def)
        node = next((n for n in out.node if n.name == "mid"), None)
        if node is None or "_drop" in node.attr:
            return PassResult(graph_def, False) if says else graph_def
        node.attr["_drop"].b = True
        return PassResult(out, True) if says else out

    return run


@pytest.mark.parametrize("says", [True, False])
def test_an_attribute_only_edit_is_a_change_when_the_pass_says_it(build, run, says):
    graph = build(model)
    passes = [GraphPass("drop_marked", drop_marked), GraphPass("mark", mark(says))]
    stripped, _ = strip_training(graph, ["y", "x"], {}, passes)
    # said: another round, where drop_marked sees the mark; bare: names, ops and inputs are as
    # before, so the driver stops after the first round (the limit GraphPass documents)
    assert ("mid" in {n.name for n in stripped.node}) is not says
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    np.testing.assert_allclose(run(stripped, {"x:0": x}, "y:0"), x * 2)


def test_a_bare_graphdef_edited_in_place_is_a_change(build):
    graph = build(model)

    def drop_identity(graph_def, context):  # a plugin's pass, editing its (owned) input
        return extract(rewire(graph_def, {"mid": "x"}, drop={"mid"}, owned=context.owned),
                       context.keep, owned=True)

    copy = copied(graph)
    out, changed = run_passes(copy, [GraphPass("drop_identity", drop_identity)], ["y", "x"], {},
                              {}, original=graph)
    assert changed and out is copy and "Identity" not in op_counts(out)
    same, changed = run_passes(out, [GraphPass("identity", lambda g, c: g)], ["y", "x"], {}, {})
    assert same is out and not changed


def test_devices_cleared_alone_are_a_change(build):
    """canonicalize's edit is of attributes only: it says so; a canonical graph is itself."""

    def placed():
        with tf.device("/cpu:0"):
            model()

    graph = build(placed)
    out, changed = run_passes(graph, [_builtin("canonicalize")], ["y", "x"], {}, {})
    assert changed and not any(n.device for n in out.node)
    same, changed = run_passes(out, [_builtin("canonicalize")], ["y", "x"], {}, {})
    assert same is out and not changed


def _builtin(name: str) -> GraphPass:
    return next(p for p in builtin_passes() if p.name == name)


@pytest.mark.parametrize("name", [p.name for p in builtin_passes()])
def test_a_pass_with_nothing_left_to_do_says_unchanged(build, name):
    """On a stripped and optimized graph every built-in pass returns its input, unchanged (a
    pass saying changed there would keep strip_training repeating to its max_rounds)."""

    def placed():
        with tf.device("/cpu:0"):
            model()

    graph, _ = strip_training(build(placed), ["y", "x"], {})
    done = optimize_for_inference(graph, ["y", "x"])
    out, changed = run_passes(done, [_builtin(name)], ["y", "x"], {}, {})
    assert out is done and not changed
