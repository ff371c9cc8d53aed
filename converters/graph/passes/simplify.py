"""Generic clean-ups: training-only debugging ops, identities, control edges, canonical form."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import graph_pb2

from graphfreeze.graph.graphdefs import (
    extract,
    is_control,
    nodes_by_name,
    rewire,
    split_tensor,
    tensor_name,
    with_nodes,
)
from graphfreeze.graph.ops import DROPPABLE_OPS

_FRAME_OPS = ("Switch", "RefSwitch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond")
_STRIP_ATTRS = ("_class", "_output_shapes", "_XlaCompile", "_XlaScope", "_XlaSeparateCompiledGradients")


def _stateful(op: str) -> bool:
    from graphfreeze.proto.ops import op_def

    found = op_def(op)
    return found is None or found.is_stateful


def drop_side_effect_controls(graph_def, keep: list[str], owned: bool = False) -> graph_pb2.GraphDef:
    """Drop control edges from stateful ops (Assert, Print, update ops) and NoOps.

    In a graph without frames (no Switch/Enter left) every control edge is dropped: nothing left
    can need ordering, and it lets constants fold. `owned=True`: edit `graph_def` in place.
    """
    by_name = nodes_by_name(graph_def)
    has_frames = any(n.op in _FRAME_OPS for n in graph_def.node)
    changes = {}
    grouping = set(keep)  # a NoOp asked for (init_all_tables) is its control inputs
    for i, node in enumerate(graph_def.node):
        if node.op == "NoOp" and node.name in grouping:
            continue
        kept = [inp for inp in node.input if not is_control(inp) or not (
            not has_frames or by_name.get(inp[1:]) is None or by_name[inp[1:]].op == "NoOp"
            or _stateful(by_name[inp[1:]].op))]
        if len(kept) != len(node.input):
            changes[i] = kept
    if not changes:
        return extract(graph_def, keep, owned=owned)
    out = graph_def if owned else with_nodes(graph_def, graph_def.node)
    for i, kept in changes.items():
        del out.node[i].input[:]
        out.node[i].input.extend(kept)
    return extract(out, keep, owned=True)


def remove_identities(graph_def, keep: list[str], owned: bool = False) -> graph_pb2.GraphDef:
    """Skip Identity-like nodes (and CheckNumerics/Print, which pass their input through)."""
    by_name = nodes_by_name(graph_def)
    protected = set(keep)
    mapping, drop = {}, set()
    for node in graph_def.node:
        if node.op not in DROPPABLE_OPS or node.name in protected or not node.input:
            continue
        source = tensor_name(*split_tensor(node.input[0]))
        src_node = by_name.get(split_tensor(source)[0])
        if src_node is not None and src_node.op in _FRAME_OPS:
            continue  # a cond pivot: control edges hang off it
        mapping[node.name] = source
        drop.add(node.name)
    if not mapping:
        return graph_def
    return extract(rewire(graph_def, mapping, drop=drop, owned=owned), keep, owned=True)


def drop_neutral_ops(graph_def, keep: list[str], owned: bool = False) -> graph_pb2.GraphDef:
    """Skip ops that leave their input as it is: BiasAdd of zeros, x + 0 and x - 0 with a
    scalar 0, x * 1 with a scalar 1 (as grappler's arithmetic optimizer does)."""
    import numpy as np
    from graphfreeze.graph.consts import const_value

    by_name = nodes_by_name(graph_def)
    protected = set(keep)
    mapping, drop = {}, set()
    for node in graph_def.node:
        data = [i for i in node.input if not is_control(i)]
        if node.name in protected or len(data) != 2 or len(data) != len(node.input):
            continue
        value = const_value(by_name, data[1])
        if value is None or value.dtype.kind not in "fiu":
            continue
        neutral = (node.op == "BiasAdd" and value.ndim == 1 and not value.any()) or \
            (node.op in ("Add", "AddV2", "Sub") and value.ndim == 0 and value == 0) or \
            (node.op == "Mul" and value.ndim == 0 and value == 1)
        if neutral and np.isfinite(value).all():
            mapping[node.name] = tensor_name(*split_tensor(data[0]))
            drop.add(node.name)
    if not mapping:
        return graph_def
    return extract(rewire(graph_def, mapping, drop=drop, owned=owned), keep, owned=True)


def canonicalize(graph_def, keep: list[str], owned: bool = False) -> graph_pb2.GraphDef:
    """Devices cleared, stale colocation/shape attrs dropped, unused functions dropped.

    Node order is left as is: `topo_order` gives the canonical order where it matters (the
    serialized .pb), which saves copying every weight once more. `owned=True`: edit in place.
    """
    out = extract(graph_def, keep, owned=owned)
    if out is graph_def and not owned:
        out = with_nodes(graph_def, graph_def.node)
    for node in out.node:
        node.device = ""
        for attr in _STRIP_ATTRS:
            if attr in node.attr:
                del node.attr[attr]
    return out
