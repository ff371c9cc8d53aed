"""A function that assigns a variable and then reads it back cannot be frozen by dropping its
assigns (what `variable_readers.finish_readers` does after TensorFlow's converter): the read
would get the saved value. Found on the graph before its variables are converted."""

from __future__ import annotations

from graphfreeze.graph.variable_readers import ASSIGNS


def refuse_assign_then_read(graph_def, where: str = "", names: dict | None = None) -> None:
    """An InputError when a body reads a variable after assigning it (the read depends on the
    assign by a data or control path): freezing drops the assign (`finish_readers`), so the read
    would get the saved value. Checked on the graph before its variables are converted (the
    converter drops a read's control inputs). `names`: a resource's source node -> the variable's
    name, for the message."""
    from graphfreeze.errors import InputError

    for nodes in [graph_def.node, *(f.node_def for f in graph_def.library.function)]:
        found = _assign_then_read(nodes)
        if found:
            node, variable = found
            variable = (names or {}).get(variable, variable)
            raise InputError(f"{where + ': ' if where else ''}graphfreeze cannot freeze "
                             f"'{node}': it assigns variable '{variable}' and then reads it; "
                             "freezing would drop the assign (a limitation of graphfreeze, not "
                             "of the file: export a function that does not read it back)")


def _assign_then_read(nodes) -> tuple[str, str] | None:
    """(an assign, its variable's source) when a node of `nodes` that depends on the assign takes
    the variable (a read, a gather, a call it is passed to)."""
    by_name = {n.name: n for n in nodes}
    assigns = [n for n in nodes if n.op in ASSIGNS]
    if not assigns:
        return None

    sources: dict[str, str] = {}

    def source(edge: str) -> str:
        """The node (or argument) `edge` comes from, through Identity nodes (walked, not
        recursed: a chain may be thousands long)."""
        chain, name = [], edge.lstrip("^").split(":")[0]
        while name not in sources:
            node = by_name.get(name)
            if node is None or node.op != "Identity" or not node.input or name in chain:
                sources[name] = name
                break
            chain.append(name)
            name = node.input[0].lstrip("^").split(":")[0]
        for link in chain:
            sources[link] = sources[name]
        return sources[name]

    consumers: dict[str, list] = {}
    for node in nodes:
        for edge in node.input:
            consumers.setdefault(edge.lstrip("^").split(":")[0], []).append(node)
    for assign in assigns:
        variable, seen, todo = source(assign.input[0]), {assign.name}, [assign.name]
        while todo:
            for node in consumers.get(todo.pop(), ()):
                if node.op not in (*ASSIGNS, "Identity") and \
                        any(source(edge) == variable for edge in node.input
                            if not edge.startswith("^")):
                    return assign.name, variable  # a read, or a call passed the variable
                if node.name not in seen:
                    seen.add(node.name)
                    todo.append(node.name)
    return None
