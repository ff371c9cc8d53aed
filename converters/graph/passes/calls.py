"""inline_calls: function calls inlined, and v2 `If`/`StatelessIf` with a constant predicate
(the chosen branch's body copied into the graph under the caller's name), calls inside library
functions too (`nested_calls`). Composite functions (`_implements`, `graph/composites.py`) are
never inlined: a converter replaces them by an op, and their body may be a stand-in
(`inline_composites` inlines them where the body is the computation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import node_def_pb2

from graphfreeze.graph.composites import composite_functions
from graphfreeze.graph.consts import const_value
from graphfreeze.graph.graphdefs import (
    is_control,
    nodes_by_name,
    replace_nodes,
    rewire,
    scopes,
    split_tensor,
    tensor_name,
)
from graphfreeze.graph.ops import CALL_OPS, IF_OPS
from graphfreeze.graph.passes.contract import PassResult
from graphfreeze.graph.passes.pruned import pruned


def inline_calls(graph_def, keep: list[str], owned: bool = False,
                 composites: bool = False) -> PassResult:
    """Inline function calls (call ops, and nodes whose op is a library function), and `If`s
    whose predicate is a constant (`owned`: in place); calls inside library functions too
    (`nested_calls`). Composite functions only with `composites` (`inline_composites`)."""
    from graphfreeze.graph.passes.nested_calls import inline_nested

    graph_def, nested = inline_nested(graph_def, owned, composites)
    owned = owned or nested
    by_name = nodes_by_name(graph_def)
    composites = {} if composites else composite_functions(graph_def)
    funcs = {f.signature.name: f for f in graph_def.library.function
             if f.signature.name not in composites}
    keep_set = set(keep)
    chosen: dict[str, str] = {}
    for node in graph_def.node:
        if node.name in keep_set:
            continue
        if node.op in IF_OPS:
            pred = const_value(by_name, node.input[0])
            if pred is not None:
                chosen[node.name] = node.attr["then_branch" if bool(pred) else "else_branch"].func.name
        elif node.op in CALL_OPS:
            chosen[node.name] = node.attr["f"].func.name
        elif node.op in funcs:  # a TF1 `Defun` call: the op is the function's name
            chosen[node.name] = node.op
    chosen = {k: v for k, v in chosen.items() if v in funcs}
    if not chosen:
        return PassResult(graph_def, nested)
    taken = scopes(by_name)
    new_nodes: list[node_def_pb2.NodeDef] = []
    mapping: dict[str, str] = {}
    library = {f.signature.name: f for f in graph_def.library.function}
    for caller, func_name in sorted(chosen.items()):
        node = by_name[caller]
        args = [i for i in node.input if not is_control(i)]
        if node.op in IF_OPS:
            args = args[1:]
        controls = [i for i in node.input if is_control(i)]
        body, outputs = _inline(funcs[func_name], library, args, controls,
                                _free_prefix(caller, taken))
        new_nodes.extend(body)
        taken |= scopes(n.name for n in body)
        for index, tensor in enumerate(outputs):
            mapping[tensor_name(caller, index)] = tensor
    graph = rewire(replace_nodes(graph_def, new_nodes, remove=chosen, owned=owned), mapping,
                   owned=True)
    return pruned(graph, keep, owned=True, changed=True)


def inline_composites(graph_def, keep: list[str]) -> PassResult:
    """Every call inlined, composite functions' too: for a target without their ops, where the
    body is the computation (TensorFlow's `non_max_suppression_padded_v2`)."""
    return inline_calls(graph_def, keep, composites=True)


def _free_prefix(caller: str, taken: set[str]) -> str:
    """A scope under `caller` that no node is in yet."""
    prefix, n = f"{caller}/inlined", 0
    while prefix in taken:
        n += 1
        prefix = f"{caller}/inlined_{n}"
    return prefix + "/"


def _inline(fdef, library: dict, args: list[str], controls: list[str], prefix: str):
    """Copy a function body under `prefix`, its arguments wired to `args`."""
    from graphfreeze.graph.function_bodies import body_nodes

    body, nested_to_flat = body_nodes(fdef, library)
    arg_names = [a.name for a in fdef.signature.input_arg]
    outer = dict(zip(arg_names, args, strict=True))

    def rename(inp: str) -> str:
        if is_control(inp):
            src = inp[1:]
            return "^" + split_tensor(outer[src])[0] if src in outer else "^" + prefix + src
        src, index = split_tensor(inp)
        if src in outer:
            return outer[src]
        return tensor_name(prefix + src, index)

    for new in body:
        inputs = list(new.input)
        new.name = prefix + new.name
        new.device = ""
        new.input[:] = [rename(i) for i in inputs]
        if not any(not is_control(i) for i in inputs):
            new.input.extend(controls)
    outputs = [rename(nested_to_flat[fdef.ret[a.name]]) for a in fdef.signature.output_arg]
    return body, outputs
