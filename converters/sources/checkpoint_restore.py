"""The original as verification runs it: its graph with a RestoreV2 of its variables and one
assign per variable added, made on the floor (what `tf.raw_ops` would add), so TensorFlow's C
API can run it without `import tensorflow`."""

from __future__ import annotations

from graphfreeze.graph.ops import VARIABLE_OPS
from graphfreeze.proto.dtypes import STRING


def restoring(graph_def, variables: dict, prefix: str) -> tuple[object, tuple[str, ...]]:
    """(graph, names of the assign ops to run first): each variable node of `graph_def` given
    its value from the checkpoint at `prefix` (as RestoreV2 reads it) under its
    `variables[name]` (a VariableSpec: key, slice, dtype)."""
    nodes = [n for n in graph_def.node if n.op in VARIABLE_OPS]
    if not nodes:
        return graph_def, ()
    specs = [variables[n.name] for n in nodes]
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    scope = _free_scope({n.name.split("/", 1)[0] for n in graph_def.node})
    _strings(out.node.add(), f"{scope}/prefix", [prefix], scalar=True)
    _strings(out.node.add(), f"{scope}/tensor_names", [s.key for s in specs])
    _strings(out.node.add(), f"{scope}/shape_and_slices", [s.slice for s in specs])
    restore = out.node.add(name=f"{scope}/RestoreV2", op="RestoreV2", input=[
        f"{scope}/prefix", f"{scope}/tensor_names", f"{scope}/shape_and_slices"])
    restore.attr["dtypes"].list.type.extend(s.dtype for s in specs)
    names = []
    for i, (node, spec) in enumerate(zip(nodes, specs, strict=True)):
        assign = out.node.add(name=f"{scope}/assign_{i}", input=[node.name, f"{restore.name}:{i}"])
        if node.op == "VarHandleOp":
            assign.op = "AssignVariableOp"
            assign.attr["dtype"].type = spec.dtype
            assign.attr["validate_shape"].b = False
        else:
            assign.op = "Assign"
            assign.attr["T"].type = spec.dtype
            assign.attr["use_locking"].b = True
            assign.attr["validate_shape"].b = True
        names.append(assign.name)
    return out, tuple(names)


def _free_scope(taken: set[str]) -> str:
    scope, n = "graphfreeze_restore", 0
    while scope in taken:
        n += 1
        scope = f"graphfreeze_restore_{n}"
    return scope


def _strings(node, name: str, values: list[str], scalar: bool = False) -> None:
    node.name, node.op = name, "Const"
    node.attr["dtype"].type = STRING
    tensor = node.attr["value"].tensor
    tensor.dtype = STRING
    tensor.tensor_shape.SetInParent()
    if not scalar:
        tensor.tensor_shape.dim.add().size = len(values)
    tensor.string_val.extend(v.encode() for v in values)
