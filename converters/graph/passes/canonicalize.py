"""canonicalize: devices cleared, stale colocation/shape/XLA attrs dropped, unused functions
dropped (an edit of attributes alone, said as a change)."""

from __future__ import annotations

from graphfreeze.graph.graphdefs import with_nodes
from graphfreeze.graph.passes.contract import PassResult
from graphfreeze.graph.passes.pruned import pruned

_STRIP_ATTRS = ("_class", "_output_shapes", "_XlaCompile", "_XlaScope", "_XlaSeparateCompiledGradients")


def _stale(node) -> bool:
    return bool(node.device) or any(attr in node.attr for attr in _STRIP_ATTRS)


def canonicalize(graph_def, keep: list[str], owned: bool = False) -> PassResult:
    """Devices cleared, stale colocation/shape attrs dropped, unused functions dropped.

    Node order is left as is: `topo_order` gives the canonical order where it matters (the
    serialized .pb), which saves copying every weight once more. `owned=True`: edit in place.
    """
    out, changed = pruned(graph_def, keep, owned)
    if not any(_stale(node) for node in out.node):
        return PassResult(out, changed)
    if out is graph_def and not owned:
        out = with_nodes(graph_def, graph_def.node)
    for node in out.node:
        node.device = ""
        for attr in _STRIP_ATTRS:
            if attr in node.attr:
                del node.attr[attr]
    return PassResult(out, True)
