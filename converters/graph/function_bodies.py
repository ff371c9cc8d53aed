"""A FunctionDef's body as GraphDef nodes, without TensorFlow: TensorFlow's
`function_def_to_graph_def` (the body's nodes, their `node:arg:i` inputs renamed `node:k` by the
ops' output arguments), which inlining copies under the caller's name."""

from __future__ import annotations


def _arg_count(arg, node) -> int:
    """Tensors one OpDef output argument stands for on `node` (node_def_util's ComputeArgRange)."""
    if arg.number_attr:
        return node.attr[arg.number_attr].i if arg.number_attr in node.attr else 0
    if arg.type_list_attr:
        return len(node.attr[arg.type_list_attr].list.type) \
            if arg.type_list_attr in node.attr else 0
    if arg.type_attr or arg.type:
        return 1
    raise ValueError(f"invalid output argument {arg.name} of op {node.op} (node {node.name})")


def body_nodes(fdef, library: dict) -> tuple[list, dict[str, str]]:
    """(copies of `fdef`'s nodes with graph-style inputs, nested name -> flat name); `library`:
    function name -> FunctionDef, for nodes that call one."""
    from graphfreeze.proto.ops import op_def

    flat: dict[str, str] = {}
    for arg in fdef.signature.input_arg:
        flat[arg.name] = f"{arg.name}:0"
        flat["^" + arg.name] = "^" + arg.name
    for node in fdef.node_def:
        signature = library[node.op].signature if node.op in library else op_def(node.op)
        if signature is None:
            raise ValueError(f"op {node.op} of node {node.name} in function "
                             f"{fdef.signature.name} is not registered")
        for attr in signature.attr:
            if attr.type in ("func", "list(func)") and attr.name in node.attr:
                value = node.attr[attr.name]
                for func in [value.func] if attr.type == "func" else value.list.func:
                    if func.name and func.name not in library:
                        raise ValueError(f"Function {func.name} was not found")
        index = 0
        for arg in signature.output_arg:
            for i in range(_arg_count(arg, node)):
                flat[f"{node.name}:{arg.name}:{i}"] = f"{node.name}:{index}"
                index += 1
        flat["^" + node.name] = "^" + node.name
    nodes = []
    for node in fdef.node_def:
        copy = type(node)()
        copy.CopyFrom(node)
        copy.input[:] = [flat[i] for i in node.input]
        nodes.append(copy)
    return nodes, flat


def map_edges(fdef, edge_map) -> None:
    """Every input of `fdef`'s body nodes and every result it returns passed through
    `edge_map` (an edge in, the edge it becomes out), in place."""
    for node in fdef.node_def:
        edges = [edge_map(e) for e in node.input]
        del node.input[:]
        node.input.extend(edges)
    for key in list(fdef.ret):
        fdef.ret[key] = edge_map(fdef.ret[key])
