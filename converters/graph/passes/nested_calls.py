"""Function calls inside library functions (a `While` body calling `non_max_suppression_padded`
through a `PartitionedCall`, as `tf.map_fn` over a batched NMS writes it), inlined in the
FunctionDef itself: TensorFlow's freezing inlines the graph's own calls, not those in bodies, and
the converters that translate a body op by op (tf2onnx's Loop, TFLite's While) have no
`PartitionedCall`. Composite functions (`_implements`) stay calls, as at the top level.

FunctionDef edges are `node:output_arg:index` (an argument: its name); a call's outputs are
`call:output:i` (`PartitionedCall`) or `call:ARG:0` (a call by the function's name).
"""

from __future__ import annotations

from graphfreeze.graph.composites import composite_functions
from graphfreeze.graph.ops import CALL_OPS


def inline_nested(graph_def, owned: bool = False, composites: bool = False):
    """`graph_def` with every library function's calls to other (monomorphic; composite ones only
    with `composites`) library functions inlined, innermost first; the graph itself untouched."""
    funcs = {f.signature.name: f for f in graph_def.library.function}
    inlinable = {name for name, f in funcs.items() if not f.signature.attr} - \
        (set() if composites else set(composite_functions(graph_def)))
    pending = [f for f in funcs.values() if any(_callee(n, inlinable) for n in f.node_def)]
    if not pending:
        return graph_def
    if not owned:
        graph_def = type(graph_def).FromString(graph_def.SerializeToString())
        funcs = {f.signature.name: f for f in graph_def.library.function}
    for _ in range(16):  # nesting depth
        changed = False
        for fdef in funcs.values():
            calls = [n for n in fdef.node_def if _callee(n, inlinable)
                     and not any(_callee(m, inlinable) for m in funcs[_callee(n, inlinable)].node_def)]
            for call in calls:
                _inline_one(fdef, call, funcs[_callee(call, inlinable)])
                changed = True
        if not changed:
            break
    return graph_def


def _callee(node, inlinable: set[str]) -> str | None:
    name = node.attr["f"].func.name if node.op in CALL_OPS else node.op
    return name if name in inlinable else None


def _inline_one(fdef, call, body) -> None:
    """Replace node `call` of `fdef` by `body`'s nodes under `CALL/inlined/`."""
    prefix = f"{call.name}/inlined/"
    taken = {n.name for n in fdef.node_def}
    while any(name.startswith(prefix) for name in taken):
        prefix = prefix[:-1] + "_/"
    args = [i for i in call.input if not i.startswith("^")]
    controls = [i for i in call.input if i.startswith("^")]
    outer = dict(zip([a.name for a in body.signature.input_arg], args, strict=True))

    def rename(edge: str) -> str:
        if edge.startswith("^"):
            src = edge[1:]
            return "^" + outer[src].split(":")[0] if src in outer else "^" + prefix + src
        head = edge.split(":")[0]
        return outer[edge] if edge in outer else prefix + edge if head else edge

    new_nodes = []
    for node in body.node_def:
        new = type(node)()
        new.CopyFrom(node)
        new.name = prefix + node.name
        del new.input[:]
        new.input.extend(rename(i) for i in node.input)
        if not any(not i.startswith("^") for i in node.input):
            new.input.extend(controls)
        new_nodes.append(new)
    results = [rename(body.ret[a.name]) for a in body.signature.output_arg]
    names = [a.name for a in body.signature.output_arg]

    def result(edge: str) -> str:
        if edge.startswith("^"):
            return edge if edge[1:] != call.name else "^" + results[0].split(":")[0]
        parts = edge.split(":")
        if parts[0] != call.name:
            return edge
        index = int(parts[2]) if len(parts) > 2 else 0
        if call.op not in CALL_OPS:  # `call:ARG:i`: ARG is one of the body's outputs
            index += names.index(parts[1])
        return results[index]

    kept = [n for n in fdef.node_def if n.name != call.name]
    del fdef.node_def[:]
    fdef.node_def.extend(kept + new_nodes)
    for node in fdef.node_def:
        edges = [result(i) for i in node.input]
        del node.input[:]
        node.input.extend(edges)
    for key in list(fdef.ret):
        fdef.ret[key] = result(fdef.ret[key])
    for key in list(fdef.control_ret):
        if fdef.control_ret[key] == call.name:
            fdef.control_ret[key] = results[0].split(":")[0]
