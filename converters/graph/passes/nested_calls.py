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
from graphfreeze.graph.function_bodies import map_edges
from graphfreeze.graph.graphdefs import scopes
from graphfreeze.graph.ops import CALL_OPS
from graphfreeze.graph.passes.contract import PassResult


def inline_nested(graph_def, owned: bool = False, composites: bool = False):
    """`graph_def` with every library function's calls to other (monomorphic; composite ones only
    with `composites`) library functions inlined, innermost first; the graph itself untouched
    (a PassResult: whether any was)."""
    funcs = {f.signature.name: f for f in graph_def.library.function}
    inlinable = {name for name, f in funcs.items() if not f.signature.attr} - \
        (set() if composites else set(composite_functions(graph_def)))
    pending = [f for f in funcs.values() if any(_callee(n, inlinable) for n in f.node_def)]
    if not pending:
        return PassResult(graph_def, False)
    if not owned:
        graph_def = type(graph_def).FromString(graph_def.SerializeToString())
        funcs = {f.signature.name: f for f in graph_def.library.function}
    for _ in range(16):  # nesting depth
        changed = False
        for fdef in funcs.values():
            calls = [n for n in fdef.node_def if _callee(n, inlinable)
                     and not any(_callee(m, inlinable) for m in funcs[_callee(n, inlinable)].node_def)]
            if calls:
                _inline_all(fdef, {c.name: funcs[_callee(c, inlinable)] for c in calls})
                changed = True
        if not changed:
            break
    return PassResult(graph_def, True)


def _callee(node, inlinable: set[str]) -> str | None:
    name = node.attr["f"].func.name if node.op in CALL_OPS else node.op
    return name if name in inlinable else None


def _inline_all(fdef, bodies: dict) -> None:
    """Replace each call node of `fdef` named in `bodies` (name: the FunctionDef it calls) by
    that body's nodes under `CALL/inlined/`, the body rewritten once for all of them."""
    taken = scopes(n.name for n in fdef.node_def)
    calls = [n for n in fdef.node_def if n.name in bodies]
    new_nodes, results = [], {}
    for call in calls:
        base = f"{call.name}/inlined"
        while base in taken:
            base += "_"
        nodes, outputs = _body(call, bodies[call.name], base + "/")
        taken |= scopes(n.name for n in nodes)
        new_nodes += nodes
        results[call.name] = (outputs, [a.name for a in bodies[call.name].signature.output_arg],
                              call.op in CALL_OPS)

    def result(edge: str) -> str:
        for _ in range(len(results) + 1):  # (a call's result may be another call's output)
            edge, was = _result(edge, results), edge
            if edge == was:
                break
        return edge

    kept = [n for n in fdef.node_def if n.name not in bodies]
    del fdef.node_def[:]
    fdef.node_def.extend(kept + new_nodes)
    map_edges(fdef, result)
    for key in list(fdef.control_ret):
        fdef.control_ret[key] = result("^" + fdef.control_ret[key])[1:]


def _body(call, body, prefix: str):
    """`body`'s nodes renamed under `prefix`, its arguments wired to `call`'s inputs; and the
    tensors its outputs become."""
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
    return new_nodes, [rename(body.ret[a.name]) for a in body.signature.output_arg]


def _result(edge: str, results: dict) -> str:
    """What `edge` reads once the calls in `results` are inlined (itself if no call's)."""
    if edge.startswith("^"):  # on a call: on its first result's node (none: left as it is)
        outputs = results[edge[1:]][0] if edge[1:] in results else ()
        return "^" + outputs[0].split(":")[0] if outputs else edge
    parts = edge.split(":")
    if parts[0] not in results:
        return edge
    outputs, names, by_call_op = results[parts[0]]
    index = int(parts[2]) if len(parts) > 2 else 0
    if not by_call_op:  # `call:ARG:i`: ARG is one of the body's outputs
        index += names.index(parts[1])
    return outputs[index]
