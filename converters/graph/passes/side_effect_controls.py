"""drop_side_effect_controls: control edges from side-effect ops (Assert, Print, update ops) and
NoOps dropped, so what they guarded is plain data flow and constants fold."""

from __future__ import annotations

from graphfreeze.graph.graphdefs import is_control, nodes_by_name, with_nodes
from graphfreeze.graph.ops import FRAME_OPS
from graphfreeze.graph.passes.contract import PassResult
from graphfreeze.graph.passes.pruned import pruned


def _stateful(op: str) -> bool:
    from graphfreeze.proto.ops import op_def

    found = op_def(op)
    return found is None or found.is_stateful


def drop_side_effect_controls(graph_def, keep: list[str], owned: bool = False) -> PassResult:
    """Drop control edges from stateful ops (Assert, Print, update ops) and NoOps.

    In a graph without frames (no Switch/Enter left) every control edge is dropped: nothing left
    can need ordering, and it lets constants fold. `owned=True`: edit `graph_def` in place.
    """
    by_name = nodes_by_name(graph_def)
    has_frames = any(n.op in FRAME_OPS for n in graph_def.node)
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
        return pruned(graph_def, keep, owned)
    out = graph_def if owned else with_nodes(graph_def, graph_def.node)
    for i, kept in changes.items():
        del out.node[i].input[:]
        out.node[i].input.extend(kept)
    return pruned(out, keep, owned=True, changed=True)
