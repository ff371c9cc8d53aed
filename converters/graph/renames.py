"""Nodes renamed in a GraphDef, every reference to them with them (tables, text resources)."""

from __future__ import annotations

from graphfreeze.graph.graphdefs import (
    GraphDef,
    free_name,
    is_control,
    split_tensor,
    tensor_name,
    with_nodes,
)


def rename_nodes(graph_def, mapping: dict[str, str]) -> tuple[GraphDef, dict[str, str]]:
    """A copy with nodes renamed (`old -> new`) and every reference to them updated, and the
    full renaming done: a node already called `new` (and not renamed itself) gets a free name."""
    names = {n.name for n in graph_def.node}
    taken = names | set(mapping.values())
    mapping = dict(mapping)
    for new in sorted(set(mapping.values())):
        if new in names and new not in mapping:
            mapping[new] = free_name(new, taken)
    out = with_nodes(graph_def, graph_def.node)
    for node in out.node:
        node.name = mapping.get(node.name, node.name)
        renamed = []
        for inp in node.input:
            control = is_control(inp)
            name, index = split_tensor(inp[1:] if control else inp)
            name = mapping.get(name, name)
            renamed.append(f"^{name}" if control else tensor_name(name, index))
        del node.input[:]
        node.input.extend(renamed)
    return out, mapping
