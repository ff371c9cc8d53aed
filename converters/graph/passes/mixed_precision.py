"""float16 compute back to float32: a model trained in mixed precision (Keras' `mixed_float16`
policy: float32 variables cast to float16, float16 layers, casts at the float32 ends) is
deployed in float32, or quantized to fp16 once by the fp16 targets, never as float16 graph ops
the converters refuse (TFLite's builtins take no float16 Conv2D, MatMul, ...).

Every float16 type attr becomes float32, float16 constants are widened (exactly), and a Cast
left from float32 to float32 (the float32 -> float16 -> float32 pairs) becomes an Identity, which
remove_identities drops. The model's ends keep their types: a float16 output gets a Cast back to
float16 under its own name (an end whose output is not float16, a Cast to float32 or an ArgMax,
keeps its own). A graph with a float16 input, float16 reaching a function call or a loop (whose
bodies keep their types), or a float16 end of an op whose outputs cannot be told or with several
outputs, is left as it is."""

from __future__ import annotations

import numpy as np
from graphfreeze.graph.consts import node_value, set_value
from graphfreeze.graph.features import output_types
from graphfreeze.graph.graphdefs import copied, free_name
from graphfreeze.proto.tf import types_pb2

HALF, FLOAT = types_pb2.DT_HALF, types_pb2.DT_FLOAT


def _half_attrs(node) -> list[str]:
    """The names of `node`'s type attrs that say float16."""
    return [k for k, v in node.attr.items()
            if v.type == HALF or HALF in v.list.type]


def _half_output(node) -> bool | None:
    """Whether `node`'s output is float16, from its op's definition (None: its op is not known,
    or it has several outputs, which one Cast under its name cannot stand for)."""
    from graphfreeze.proto.ops import op_def

    if op_def(node.op) is None:
        return None
    types = output_types(node)
    return None if len(types) > 1 and HALF in types else types == [HALF]


def _calls(node) -> bool:
    return any(v.func.name or v.list.func for v in node.attr.values())


def float32_compute(graph_def, keep: list[str], owned: bool = False) -> tuple[object, int]:
    """(`graph_def` with its float16 compute in float32 (a copy unless `owned`), how many nodes
    it changed); (itself, 0) when it has none, or when its float16 is not mixed precision's
    (see the module docstring)."""
    half = [n for n in graph_def.node if _half_attrs(n)]
    if not half or any(n.op == "Placeholder" or _calls(n) for n in half):
        return graph_def, 0
    kept = set(keep)
    halves = {n.name: _half_output(n) for n in half if n.name in kept}
    if None in halves.values():
        return graph_def, 0
    out = graph_def if owned else copied(graph_def)
    taken = {n.name for n in out.node}
    ends = []
    for node in out.node:
        names = _half_attrs(node)
        if not names:
            continue
        if node.op == "Const":
            set_value(node, np.asarray(node_value(node), np.float32), own=True)
        for name in names:
            attr = node.attr[name]
            if attr.type == HALF:
                attr.type = FLOAT
            else:
                attr.list.type[:] = [FLOAT if t == HALF else t for t in attr.list.type]
        if node.op == "Cast" and node.attr["SrcT"].type == node.attr["DstT"].type:
            _identity(node)
        if halves.get(node.name):
            ends.append(node)
    for node in ends:  # the output keeps its float16 type and its name
        name, node.name = node.name, free_name(f"{node.name}/float32", taken)
        cast = out.node.add(name=name, op="Cast", input=[node.name])
        cast.attr["SrcT"].type, cast.attr["DstT"].type = FLOAT, HALF
        for other in out.node:
            if other is not cast:
                other.input[:] = [_renamed(i, name, node.name) for i in other.input]
    return out, len(half)


def _identity(node) -> None:
    """A Cast to its own type as the Identity it is."""
    dtype = node.attr["SrcT"].type
    for name in ("SrcT", "DstT", "Truncate"):
        if name in node.attr:
            del node.attr[name]
    node.op = "Identity"
    node.attr["T"].type = dtype


def _renamed(inp: str, old: str, new: str) -> str:
    """An input naming node `old` (as `old`, `old:N`, `^old`) renamed to `new`."""
    control = inp.startswith("^")
    name, _, index = inp.lstrip("^").partition(":")
    if name != old:
        return inp
    return ("^" if control else "") + new + (f":{index}" if index else "")
