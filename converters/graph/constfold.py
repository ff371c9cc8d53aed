"""Constant folding: evaluate once what depends only on constants, keep the frontier as Consts."""

from __future__ import annotations

from graphfreeze.graph.consts import make_const
from graphfreeze.graph.graphdefs import (
    extract,
    is_control,
    nodes_by_name,
    reachable,
    replace_nodes,
    rewire,
    split_tensor,
    tensor_name,
    topo_order,
    with_nodes,
)
from graphfreeze.graph.session import run_graph_def
from tensorflow.core.framework import graph_pb2
from tensorflow.python.framework import op_def_registry

_NEVER_FOLD = {
    "Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "Switch", "RefSwitch", "Merge",
    "RefMerge", "Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration",
    "LoopCond", "ControlTrigger", "NoOp", "If", "StatelessIf", "While", "StatelessWhile", "Case",
    "StatelessCase", "PartitionedCall", "StatefulPartitionedCall", "Const",
}
MAX_GROWTH_BYTES = 16 << 20  # don't materialise a big tensor out of small inputs (Fill, Tile...)


def _foldable_op(op: str) -> bool:
    if op in _NEVER_FOLD:
        return False
    op_def = op_def_registry.get(op)
    return op_def is not None and not op_def.is_stateful


def fold_constants(graph_def, keep: list[str], owned: bool = False) -> graph_pb2.GraphDef:
    """Replace every non-Const node computable from Consts alone by its value.

    `keep` are output node names: they survive (as Consts if folded) and define what is kept.
    `owned=True`: edit `graph_def` in place.
    """
    order = topo_order(graph_def)
    # A Const with control inputs may sit in a cond branch (its frame): it is not a free value.
    const = {n.name for n in graph_def.node
             if n.op == "Const" and not any(is_control(i) for i in n.input)}
    foldable: set[str] = set()
    for node in order:
        if node.name in const or not _foldable_op(node.op):
            continue
        data = [split_tensor(i)[0] for i in node.input if not is_control(i)]
        controls = [i[1:] for i in node.input if is_control(i)]
        if data and all(d in const or d in foldable for d in data) and \
                all(c in const or c in foldable for c in controls):
            foldable.add(node.name)
    if not foldable:
        return graph_def
    wanted: set[tuple[str, int]] = {(k, 0) for k in keep if k in foldable}
    for node in graph_def.node:
        if node.name in foldable:
            continue
        for inp in node.input:
            src, index = split_tensor(inp)
            if src in foldable and index >= 0:
                wanted.add((src, index))
    if not wanted:
        return extract(graph_def, keep, owned=owned)
    needed = reachable(graph_def, {name for name, _ in wanted})
    values = _evaluate(graph_def, needed & (foldable | const), sorted(wanted))
    by_name = nodes_by_name(graph_def)
    new_nodes, mapping = [], {}
    for (name, index), value in zip(sorted(wanted), values, strict=True):
        inputs_bytes = sum(_const_bytes(by_name, i) for i in by_name[name].input)
        if value.nbytes > MAX_GROWTH_BYTES and value.nbytes > 2 * inputs_bytes:
            continue
        new_name = name if index == 0 else f"{name}/output_{index}"
        new_nodes.append(make_const(new_name, value))
        if index != 0:
            mapping[tensor_name(name, index)] = new_name
    graph = rewire(replace_nodes(graph_def, new_nodes, owned=owned), mapping, owned=True)
    return extract(graph, keep, owned=True)


def _const_bytes(by_name, inp: str) -> int:
    node = by_name.get(split_tensor(inp)[0])
    if node is None or node.op != "Const":
        return 0
    return node.attr["value"].tensor.ByteSize()


def _evaluate(graph_def, names: set[str], tensors: list[tuple[str, int]]) -> list:
    sub = with_nodes(graph_def, (n for n in graph_def.node if n.name in names))
    for node in sub.node:  # values never depend on control edges
        kept = [i for i in node.input if not is_control(i)]
        del node.input[:]
        node.input.extend(kept)
    return run_graph_def(sub, {}, [f"{n}:{i}" for n, i in tensors])
