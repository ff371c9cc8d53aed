"""resolve_switches: v1 control flow whose predicate is now a constant resolved.

The live output of a Switch is wired to its data, everything fed only by the dead output is
removed, and each Merge becomes an Identity of its one live input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import node_def_pb2

from graphfreeze.errors import InputError
from graphfreeze.graph.consts import const_value, make_const
from graphfreeze.graph.graphdefs import (
    is_control,
    nodes_by_name,
    replace_nodes,
    rewire,
    split_tensor,
    tensor_name,
    topo_order,
)
from graphfreeze.graph.ops import MERGE_OPS, SWITCH_OPS
from graphfreeze.graph.passes.contract import PassResult
from graphfreeze.graph.passes.pruned import pruned


def resolve_switches(graph_def, keep: list[str], owned: bool = False) -> PassResult:
    """Remove the dead side of every Switch whose predicate is a constant.

    `owned=True`: edit `graph_def` in place.
    """
    by_name = nodes_by_name(graph_def)
    mapping: dict[str, str] = {}
    dead_tensors: set[str] = set()
    dead_nodes: set[str] = set()
    resolved: set[str] = set()
    replaced: dict[str, node_def_pb2.NodeDef] = {}
    for node in topo_order(graph_def):
        data = [tensor_name(*split_tensor(i)) for i in node.input if not is_control(i)]
        controls = [i[1:] for i in node.input if is_control(i)]
        if node.op in MERGE_OPS:
            live = [t for t in data if t not in dead_tensors and split_tensor(t)[0] not in dead_nodes]
            if not live:
                dead_nodes.add(node.name)
            elif len(live) < len(data):
                index = data.index(live[0])
                replaced[node.name] = _identity(node, live[0])
                replaced[node.name + "/value_index"] = make_const(node.name + "/value_index", index)
                mapping[tensor_name(node.name, 1)] = node.name + "/value_index"
            continue
        if any(t in dead_tensors or split_tensor(t)[0] in dead_nodes for t in data) or \
                any(c in dead_nodes for c in controls):
            dead_nodes.add(node.name)
            continue
        if node.op in SWITCH_OPS:
            pred = const_value(by_name, node.input[1])
            if pred is None:
                continue
            live_index = 1 if bool(pred) else 0
            mapping[tensor_name(node.name, live_index)] = tensor_name(*split_tensor(node.input[0]))
            dead_tensors.add(tensor_name(node.name, 1 - live_index))
            resolved.add(node.name)
    if not resolved:
        return PassResult(graph_def, False)
    for name in keep:
        if name in dead_nodes:
            raise InputError(f"output '{name}' is only computed on the training branch (the "
                             "flags are folded to inference); give an output inference computes")
    graph = rewire(replace_nodes(graph_def, list(replaced.values()), owned=owned), mapping,
                   drop=dead_nodes | resolved, owned=True)
    return pruned(graph, keep, owned=True, changed=True)


def _identity(node, source: str) -> node_def_pb2.NodeDef:
    new = type(node)(name=node.name, op="Identity", input=[source])
    new.attr["T"].CopyFrom(node.attr["T"])
    return new
