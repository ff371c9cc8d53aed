"""A frozen GraphDef (.pb) drawn by Model Explorer's `builtin_graphdef` adapter (parsed, nothing
run). Its nodes carry no tensor names: a node's key is its index in the GraphDef as written
(the export may order it anew)."""

from __future__ import annotations

from graphfreeze.plugins import Explorer, by_index


def keys(path: str, nodes: list[str]) -> dict[str, str]:
    from graphfreeze.io import storage
    from graphfreeze.proto.tf import graph_pb2

    return by_index(graph_pb2.GraphDef.FromString(storage.read_bytes(path)), nodes)


EXPLORER = Explorer("builtin_graphdef", "frozen GraphDefs (.pb)", keys,
                    lambda path: path.lower().endswith(".pb"))
