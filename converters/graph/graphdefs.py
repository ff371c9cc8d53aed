"""Small helpers over GraphDef protos: names, edges, reachability, sorting, rewiring; the
shared tools of graphfreeze.graph's passes. No TensorFlow (new protos: `type(graph_def)()`)."""

from __future__ import annotations

import gc
import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable
from contextlib import contextmanager
from typing import Any

from graphfreeze.graph.colocation import drop_lost_colocations

GraphDef = NodeDef = Any  # tensorflow protos, typed loosely to avoid importing TensorFlow


def split_tensor(name: str) -> tuple[str, int]:
    """'x' -> ('x', 0); 'x:1' -> ('x', 1); '^x' -> ('x', -1) for a control input."""
    if name.startswith("^"):
        return name[1:], -1
    node, sep, index = name.rpartition(":")
    if sep and index.isascii() and index.isdigit():  # (as TensorFlow parses it: not '²')
        return node, int(index)
    return name, 0


def node_of(name: str) -> str:
    return split_tensor(name)[0]


def tensor_name(node: str, index: int = 0) -> str:
    """The canonical edge spelling used inside GraphDefs ('x' for output 0)."""
    return node if index == 0 else f"{node}:{index}"


def is_control(name: str) -> bool:
    return name.startswith("^")


@contextmanager
def gc_paused():
    """Python's cycle collector paused while passes walk a big graph: they make many short-lived
    acyclic objects (proto wrappers, name strings), and each full collection rescans everything
    alive, which made the passes grow faster than the graph. Restored as it was after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def all_nodes(graph_def) -> list[NodeDef]:
    """The graph's nodes, then those of its function library's bodies."""
    return [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]


def first_of_op(graph_def, op: str) -> str:
    """The name of the first node (of the graph, else a function body) of type `op`."""
    return next(n.name for n in all_nodes(graph_def) if n.op == op)


def colocations(node) -> list[str]:
    """The nodes `node`'s `_class` attr colocates it with (`loc:@NAME`), read as TensorFlow's
    Python importer reads it: a ValueError if the attr is not a list of text."""
    value = node.attr["_class"] if "_class" in node.attr else None
    if value is None:
        return []
    if value.WhichOneof("value") != "list" or any(f.name != "s" for f, _ in
                                                  value.list.ListFields()):
        raise ValueError("a _class attr that is not a list of strings")
    entries = [entry.decode() for entry in value.list.s]  # (UnicodeDecodeError: a ValueError)
    return [entry[5:] for entry in entries if entry.startswith("loc:@")]


def scopes(names: Iterable[str]) -> set[str]:
    """Every scope the names are in (`a/b/c`: `a`, `a/b`)."""
    found = set()
    for name in names:
        while (cut := name.rfind("/")) > 0 and (name := name[:cut]) not in found:
            found.add(name)
    return found


def nodes_by_name(graph_def) -> dict[str, NodeDef]:
    return {n.name: n for n in graph_def.node}


def consumers(graph_def) -> dict[str, list[str]]:
    """Node name -> names of nodes that take it as a data or control input."""
    out: dict[str, list[str]] = defaultdict(list)
    for n in graph_def.node:
        name = n.name
        for inp in n.input:
            if inp[:1] == "^":
                inp = inp[1:]
            elif ":" in inp:  # node_of, inlined: the graphs' most walked loop
                head, _, index = inp.rpartition(":")
                inp = head if index.isdigit() else inp
            out[inp].append(name)
    return out


def reachable(graph_def, roots: Iterable[str], stop_at: Iterable[str] = ()) -> set[str]:
    """Names of the nodes `roots` depend on (themselves included), not walking past `stop_at`."""
    by_name = nodes_by_name(graph_def)
    stop = set(stop_at)
    seen: set[str] = set()
    todo = [node_of(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        if name in stop:
            continue
        todo.extend(node_of(i) for i in by_name[name].input)
    return seen


def copied(message):
    """A copy of a protobuf message (a GraphDef, a NodeDef)."""
    (copy := type(message)()).CopyFrom(message)
    return copy


def with_nodes(graph_def, nodes: Iterable[NodeDef], functions: set[str] | None = None) -> GraphDef:
    """A GraphDef with the same versions and library as `graph_def` but the given nodes; only
    the library's `functions` (and their gradients) if given (none copied to be dropped)."""
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    library = graph_def.library
    if functions is None:
        out.library.CopyFrom(library)
    else:
        out.library.function.extend(f for f in library.function if f.signature.name in functions)
        out.library.gradient.extend(g for g in library.gradient if g.function_name in functions)
        out.library.registered_gradients.extend(library.registered_gradients)
    out.node.extend(nodes)
    return out


def extract(graph_def, roots: Iterable[str], stop_at: Iterable[str] = (),
            owned: bool = False) -> GraphDef:
    """The subgraph `roots` depend on, functions the kept nodes don't use dropped: `graph_def`
    itself when nothing goes; with `owned=True` (the caller just built it) edited in place."""
    keep = reachable(graph_def, roots, stop_at)
    if owned or len(keep) == len(graph_def.node):
        cut = [i for i, n in enumerate(graph_def.node) if n.name not in keep]
        for i in reversed(cut):
            del graph_def.node[i]
        return prune_functions(drop_lost_colocations(graph_def) if cut else graph_def, owned)
    nodes = [n for n in graph_def.node if n.name in keep]
    funcs = {f.signature.name: f for f in graph_def.library.function}
    return drop_lost_colocations(with_nodes(graph_def, nodes, functions_reached(funcs, nodes)))


def rewire(graph_def, mapping: dict[str, str], drop: set[str] = frozenset(),
           owned: bool = False) -> GraphDef:
    """Replace data inputs by `mapping` (canonical tensor names), drop nodes in `drop`.

    Control inputs on a replaced node move to the replacement's node; inputs naming dropped
    nodes are removed (controls) -- a data input on a dropped node is a bug and raises.
    With `owned=True` (the caller just built `graph_def`) it is edited in place, not copied.
    """
    out = graph_def if owned else with_nodes(graph_def, ())
    ends = {}  # each mapped edge's last hop (a chain followed once, not once per reader)
    for edge in mapping:
        hops = [edge]
        while hops[-1] in mapping and hops[-1] not in ends and len(hops) <= len(mapping):
            hops.append(mapping[hops[-1]])
        ends.update(dict.fromkeys(hops, ends.get(hops[-1], hops[-1])))
    for node in graph_def.node:
        if node.name in drop:
            continue
        inputs = _rewired_inputs(node, mapping, ends, drop)
        if owned:
            if inputs != list(node.input):
                del node.input[:]
                node.input.extend(inputs)
            continue
        new = out.node.add()
        new.CopyFrom(node)
        del new.input[:]
        new.input.extend(inputs)
    if owned and drop:
        for i in reversed([i for i, n in enumerate(out.node) if n.name in drop]):
            del out.node[i]
    return out


def _rewired_inputs(node, mapping: dict[str, str], ends: dict[str, str], drop) -> list[str]:
    data: list[str] = []
    controls: dict[str, None] = {}  # (ordered, each once)
    for inp in node.input:
        if is_control(inp):
            target = node_of(mapping.get(inp[1:], inp[1:]))
            if target not in drop:
                controls[f"^{target}"] = None
            continue
        canon = ends.get(canon := tensor_name(*split_tensor(inp)), canon)
        if node_of(canon) in drop:
            raise ValueError(f"node {node.name} still reads dropped node {node_of(canon)}")
        data.append(canon)
    return data + list(controls)


def topo_order(graph_def) -> list[NodeDef]:
    """The nodes (not copies) in a deterministic order: producers before consumers, ties broken
    by name."""
    by_name = nodes_by_name(graph_def)
    pending = {n.name: {node_of(i) for i in n.input if node_of(i) in by_name} for n in graph_def.node}
    users = consumers(graph_def)
    ready = [name for name, deps in pending.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for user in set(users.get(name, ())):
            deps = pending[user]
            if name in deps:
                deps.discard(name)
                if not deps:
                    heapq.heappush(ready, user)
    if len(order) != len(by_name):  # cycles (while loops): keep the rest in name order
        placed = set(order)
        order.extend(sorted(n for n in by_name if n not in placed))
    return [by_name[n] for n in order]


def replace_nodes(graph_def, new_nodes: list[NodeDef], remove: Iterable[str] = (),
                  owned: bool = False) -> GraphDef:
    """`graph_def` without the nodes in `remove` or named like a new node, plus `new_nodes`.

    A copy, unless `owned=True` (the caller's own graph, edited in place).
    """
    gone = set(remove) | {n.name for n in new_nodes}
    if not owned:
        return with_nodes(graph_def, [n for n in graph_def.node if n.name not in gone] + new_nodes)
    for i in reversed([i for i, n in enumerate(graph_def.node) if n.name in gone]):
        del graph_def.node[i]
    graph_def.node.extend(new_nodes)
    return graph_def


def function_names_used(attr_values: Iterable) -> set[str]:
    names: set[str] = set()
    for value in attr_values:
        kind = value.WhichOneof("value")
        if kind == "func":
            names.add(value.func.name)
        elif kind == "list" and value.list.func:
            names.update(f.name for f in value.list.func)
    return names


def callees(node, funcs: dict) -> set[str]:
    """The library functions `node` calls: through a function attribute, or as its op."""
    names = function_names_used(node.attr.values())
    if node.op in funcs:
        names.add(node.op)
    return names


def functions_reached(funcs: dict, nodes: Iterable[NodeDef]) -> set[str]:
    """The library functions (`funcs`: name -> FunctionDef) `nodes` call, transitively."""
    if not funcs:
        return set()
    todo = set().union(*(callees(n, funcs) for n in nodes))
    used: set[str] = set()
    while todo:
        name = todo.pop()
        if name in used or name not in funcs:
            continue
        used.add(name)
        todo |= set().union(*(callees(n, funcs) for n in funcs[name].node_def))
    return used


def prune_functions(graph_def, owned: bool = False) -> GraphDef:
    """Drop library functions no node (transitively) calls."""
    if not graph_def.library.function:
        return graph_def
    funcs = {f.signature.name: f for f in graph_def.library.function}
    used = functions_reached(funcs, graph_def.node)
    if len(used) == len(funcs):
        return graph_def
    if not owned:
        graph_def = copied(graph_def)
    library = graph_def.library
    for i in reversed([i for i, f in enumerate(library.function) if f.signature.name not in used]):
        del library.function[i]
    for i in reversed([i for i, g in enumerate(library.gradient) if g.function_name not in used]):
        del library.gradient[i]
    return graph_def


def op_counts(graph_def, functions: bool = False) -> dict[str, int]:
    """Op type -> node count in the graph (and in its library's function bodies if asked)."""
    nodes = all_nodes(graph_def) if functions else graph_def.node
    return dict(sorted(Counter(n.op for n in nodes).items()))


def free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name_1`, `name_2`, ... : the first not in `taken`, which it is added to."""
    candidate, k = name, 0
    while candidate in taken:
        k += 1
        candidate = f"{name}_{k}"
    taken.add(candidate)
    return candidate

