"""Colocation (`_class` attrs, `loc:@NAME`) kept true when nodes go. No TensorFlow."""

from __future__ import annotations


def drop_lost_colocations(graph_def) -> object:
    """`graph_def`, its `_class` entries `loc:@NAME` naming a node not in it removed in place,
    as TensorFlow's export of a scope drops those outside it: a cut graph still imports."""
    names = {n.name.encode() for n in graph_def.node}
    for node in graph_def.node:
        entries = node.attr["_class"].list.s if "_class" in node.attr else []
        if len(kept := [e for e in entries if e[:5] != b"loc:@" or e[5:] in names]) < len(entries):
            del entries[:]
            entries.extend(kept)
    return graph_def
