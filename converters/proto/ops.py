"""TensorFlow's op registry without TensorFlow: the OpDefs and graph versions of the
TensorFlow graphfreeze pins, snapshotted by `graphfreeze.proto.snapshot` (op_defs.pb,
registry.json); once TensorFlow is imported, its live registry answers (with the op libraries
loaded since: a custom op is known only then)."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


@functools.cache
def _snapshot() -> dict:
    from graphfreeze.proto.tf import op_def_pb2

    ops = op_def_pb2.OpList.FromString((HERE / "op_defs.pb").read_bytes())
    return {op.name: op for op in ops.op}


@functools.cache
def versions() -> dict:
    """{"tensorflow": "2.21.0", "graph_def_version": ..., "graph_def_version_min_producer": ...}"""
    return json.loads((HERE / "registry.json").read_text())


def attr_value(node, op_def, name: str):
    """The AttrValue `name` of `node`, else its op's default (None: neither)."""
    if name in node.attr:
        return node.attr[name]
    return next((a.default_value for a in op_def.attr if a.name == name and
                 a.HasField("default_value")), None)


def arg_types(args, node, found) -> list[int]:
    """The DataTypes of an OpDef's (`found`) input or output `args` on `node`, one per tensor (a
    ref as its type + 100); KeyError naming an attr neither the node nor the op sets."""
    def attr(name: str):
        value = attr_value(node, found, name)
        if value is None:
            raise KeyError(name)
        return value

    out = []
    for arg in args:
        if arg.type_list_attr:
            types = list(attr(arg.type_list_attr).list.type)
        else:
            one = arg.type or attr(arg.type_attr).type
            types = [one] * (attr(arg.number_attr).i if arg.number_attr else 1)
        out.extend(t + 100 if arg.is_ref else t for t in types)
    return out


def tensorflow_imported() -> bool:
    """Whether TensorFlow's Python API is imported (not still importing, in another thread)."""
    module = sys.modules.get("tensorflow")
    return module is not None and not getattr(module.__spec__, "_initializing", False)


def op_def(op: str):
    """The OpDef of op type `op` (None: not defined): TensorFlow's live registry once TensorFlow
    is imported (it may have loaded op libraries since), else the snapshot."""
    if not tensorflow_imported():
        return _snapshot().get(op)
    from tensorflow.python.framework import op_def_registry

    return op_def_registry.get(op)


def output_count(graph_def, node) -> int | None:
    """How many tensors `node` outputs, from its op's definition (a library function's
    signature or TensorFlow's op registry) and its attrs; None if that cannot be told."""
    funcs = {f.signature.name: f.signature for f in graph_def.library.function}
    found = funcs.get(node.op) or op_def(node.op)
    if found is None:
        return None
    total = 0
    for arg in found.output_arg:
        if arg.number_attr or arg.type_list_attr:
            key = arg.number_attr or arg.type_list_attr
            value = attr_value(node, found, key)
            if value is None:
                return None
            total += value.i if arg.number_attr else len(value.list.type)
        else:
            total += 1
    return total
