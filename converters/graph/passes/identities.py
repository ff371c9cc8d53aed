"""remove_identities: Identity-like ops (and CheckNumerics/Print, which pass their input
through) skipped, their readers wired to their input."""

from __future__ import annotations

from graphfreeze.graph.graphdefs import nodes_by_name, rewire, split_tensor, tensor_name
from graphfreeze.graph.ops import DROPPABLE_OPS, FRAME_OPS
from graphfreeze.graph.passes.contract import PassResult
from graphfreeze.graph.passes.pruned import pruned


def remove_identities(graph_def, keep: list[str], owned: bool = False) -> PassResult:
    """Skip Identity-like nodes (and CheckNumerics/Print, which pass their input through)."""
    by_name = nodes_by_name(graph_def)
    protected = set(keep)
    mapping, drop = {}, set()
    for node in graph_def.node:
        if node.op not in DROPPABLE_OPS or node.name in protected or not node.input:
            continue
        source = tensor_name(*split_tensor(node.input[0]))
        src_node = by_name.get(split_tensor(source)[0])
        if src_node is not None and src_node.op in FRAME_OPS:
            continue  # a cond pivot: control edges hang off it
        mapping[node.name] = source
        drop.add(node.name)
    if not mapping:
        return PassResult(graph_def, False)
    return pruned(rewire(graph_def, mapping, drop=drop, owned=owned), keep, owned=True,
                  changed=True)
