"""Dropout to identity, in any form: a random mask compared with a rate and applied to scaled data.

Matches what `tf.nn.dropout` builds in every TF version -- `SelectV2(uniform >= rate, x * scale,
0)`, `x / keep_prob * Floor(keep_prob + uniform)` -- with the rate a constant, a folded flag, or
a tensor. The inference value of dropout is its input, so the whole pattern becomes `x`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import graph_pb2

from graphfreeze.graph.graphdefs import (
    consumers,
    extract,
    is_control,
    nodes_by_name,
    rewire,
    split_tensor,
    tensor_name,
)

RANDOM_OPS = {
    "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
    "StatelessRandomUniform", "StatelessRandomUniformV2", "StatelessRandomNormal",
    "StatelessRandomNormalV2", "StatelessRandomUniformFullIntV2", "StatelessRandomUniformIntV2",
    "StatelessTruncatedNormalV2", "StatefulUniform", "StatefulUniformFullInt",
}
_CARRY = {"Mul", "Add", "AddV2", "Sub", "Cast", "Identity", "Floor", "RealDiv", "Reshape",
          "StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg"}
_COMPARE = {"GreaterEqual", "Greater", "Less", "LessEqual", "Floor"}
_MASK_CARRY = {"Cast", "Identity"}


def remove_dropout(graph_def, keep: list[str]) -> tuple[graph_pb2.GraphDef, list[str]]:
    """Returns the graph with each dropout replaced by its input, and the dropouts' names."""
    by_name = nodes_by_name(graph_def)
    users = consumers(graph_def)
    random = _forward(users, by_name, [n.name for n in graph_def.node if n.op in RANDOM_OPS],
                      _CARRY | _COMPARE)
    masks = _forward(users, by_name,
                     [n for n in random if by_name[n].op in _COMPARE], _MASK_CARRY)
    mapping: dict[str, str] = {}
    removed: list[str] = []
    for node in graph_def.node:
        data = [i for i in node.input if not is_control(i)]
        scaled = None
        if node.op in ("SelectV2", "Select") and len(data) == 3 and \
                split_tensor(data[0])[0] in masks:
            scaled = data[1]
        elif node.op == "Mul" and len(data) == 2:
            in_mask = [split_tensor(d)[0] in masks for d in data]
            if in_mask.count(True) == 1:
                scaled = data[in_mask.index(False)]
        if scaled is None:
            continue
        x = _unscale(by_name, scaled, random)
        if x is not None:
            mapping[node.name] = x
            removed.append(node.name)
    if not mapping:
        return graph_def, []
    graph = rewire(graph_def, mapping, drop=set(removed))
    return extract(graph, keep, owned=True), sorted(removed)


def _forward(users, by_name, starts, through: set[str]) -> set[str]:
    seen = set(starts)
    todo = list(starts)
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in seen and by_name[user].op in through:
                seen.add(user)
                todo.append(user)
    return seen


def _unscale(by_name, tensor: str, random: set[str]) -> str | None:
    """x from `x * scale` or `x / keep_prob` (the data side of a dropout)."""
    node = by_name.get(split_tensor(tensor)[0])
    if node is None or node.name in random:
        return None
    inputs = [tensor_name(*split_tensor(i)) for i in node.input if not is_control(i)]
    if node.op == "RealDiv":
        return inputs[0]
    if node.op == "Mul":
        scalars = [_is_scalar_factor(by_name, i) for i in inputs]
        if scalars.count(True) == 1:
            return inputs[scalars.index(False)]
    return None


def _is_scalar_factor(by_name, tensor: str) -> bool:
    """A scale factor: a scalar Const, or a scalar computed from consts/flags (each node judged
    once, without recursion: a deep or diamond-shaped scale is no deeper or wider to judge)."""
    known: dict[str, bool] = {}
    opened: set[str] = set()  # its args pushed: judged when it comes back (a cycle: not a scale)
    stack = [split_tensor(tensor)[0]]
    while stack:
        if (name := stack.pop()) in known:
            continue
        node = by_name.get(name)
        if node is None or node.op not in _SCALE_OPS:
            known[name] = node is not None and node.op == "Const" and \
                len(node.attr["value"].tensor.tensor_shape.dim) == 0
            continue
        args = [split_tensor(i)[0] for i in node.input if not is_control(i)]
        if name in opened:
            known[name] = all(known.get(a, False) for a in args)
            continue
        opened.add(name)
        stack.append(name)
        stack.extend(a for a in args if a not in known and a not in opened)
    return known[split_tensor(tensor)[0]]


_SCALE_OPS = ("RealDiv", "Reciprocal", "Sub", "Cast")
