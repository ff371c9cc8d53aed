"""Weights apart from structure: a graph's big constants are its weights; its *skeleton* is the
graph with their bytes dropped (dtype and shape kept), which TensorFlow can import, infer shapes
on and run with the weights fed, without holding more copies of them."""

from __future__ import annotations

from graphfreeze.graph.consts import BIG_CONST_ELEMENTS


def is_big_const(node) -> bool:
    if node.op != "Const":
        return False
    count = 1
    for dim in node.attr["value"].tensor.tensor_shape.dim:
        count *= dim.size
    return count >= BIG_CONST_ELEMENTS


def skeleton(graph_def):
    """The graph with big constants' bytes dropped: enough for shape inference and, with the
    weights fed (`run_frozen`), for running it."""
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        new = out.node.add()
        if not is_big_const(node):
            new.CopyFrom(node)  # small constants may be shapes or axes: keep their values
            continue
        new.name, new.op = node.name, node.op
        new.input.extend(node.input)
        new.attr["dtype"].CopyFrom(node.attr["dtype"])
        tensor = new.attr["value"].tensor
        tensor.dtype = node.attr["value"].tensor.dtype
        tensor.tensor_shape.CopyFrom(node.attr["value"].tensor.tensor_shape)
    return out


def weight_arrays(graph_def, weights=None) -> dict:
    """{'W:0': numpy array} for each big constant (views of the protos' bytes where possible;
    those held apart read from `weights`)."""
    from graphfreeze.graph.consts import tensor_array
    from graphfreeze.graph.weights import is_held

    return {f"{n.name}:0": weights.value(n) if is_held(n) else tensor_array(n.attr["value"].tensor)
            for n in graph_def.node if is_big_const(n)}


def run_frozen(graph_def, feeds: dict, fetches: list[str], weights=None) -> list:
    """Run a frozen graph: its skeleton imported, its weights fed. Same ops, same numbers,
    without TensorFlow holding three more copies of the weights."""
    from graphfreeze.graph.session import run_graph_def

    return run_graph_def(skeleton(graph_def), {**feeds, **weight_arrays(graph_def, weights)},
                         fetches)
