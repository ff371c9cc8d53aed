"""Checks of each node's inputs: data inputs first, then control inputs; as many data inputs as
the op takes; every input names a node (or, in a function body, an argument) and an output it
has; no node waits, through its inputs, for itself. Part of `validate.check_graph_def`.

Most graphs list each node after all it reads and waits for, and spell each input one way:
`inputs_in_order` passes such inputs at a glance (set lookups of the spellings of the outputs
of the nodes before) and leaves any other node to `check_inputs`, which names what is wrong.
"""

from __future__ import annotations

from graphfreeze.errors import InputError
from graphfreeze.graph.checks.loops import FIX as _FIX
from graphfreeze.graph.graphdefs import split_tensor

_LOOP_BACK = ("NextIteration", "RefNextIteration")  # while-loop back edges into Merge


def node_at(where: str, scope: str, node) -> str:
    """How an error names `node`: `model.pb: function 'f', node 'x' (Identity)`."""
    return f"{where}: {scope}node '{node.name}' ({node.op})"


def inputs_in_order(nodes, names, op_of, outputs, where, scope, args) -> bool:
    """Check every node's inputs as check_inputs does; True if each node waits only for nodes
    listed before it (then none waits for itself). A node's inputs pass at a glance when its
    data inputs are spellings known good that name earlier nodes (or arguments), and its control
    inputs earlier nodes; any other node is left to check_inputs."""
    text = "\n".join([*names, *(args or ())])
    if ":" in text or text[:1] == "^" or "\n^" in text:  # names that read as other spellings
        return False
    # input spellings known good: arguments, then earlier nodes' outputs; `^name` of those
    if args is None:
        reads, waits = set(), set()
    else:
        reads, waits = set(args), {"^" + a for a in args if a not in op_of}
    ordered, spare = True, 4 * len(nodes) + 4096  # spellings of outputs past the first to make
    waited = None  # the last control inputs seen to name earlier nodes
    for node, name in zip(nodes, names, strict=True):
        op, inputs = op_of[name], node.input
        n, given = op.n_inputs, len(inputs)
        if n is None:
            counts = op.input_counts(node)
            n = -1 if None in counts else sum(counts)
        if given == n:
            seen = reads.issuperset(inputs)
        elif 0 <= n < given and reads.issuperset(inputs[:n]):
            controls = inputs[n:]  # often those of the node before (tf.control_dependencies)
            seen = controls == waited or waits.issuperset(controls)
            waited = controls if seen else waited
        else:
            seen = False
        if not seen:
            deps = check_inputs(node, op_of, outputs, node_at(where, scope, node), args)
            ordered = ordered and all("^" + d in waits for d in deps)
        waits.add("^" + name)
        counts = outputs[name]
        if args is None:
            reads.add(name)
            total = op.n_outputs
            if total is None:
                total = 0 if None in counts else sum(counts)
            if total > 1 and spare > 0:  # `name:1`, ... (`name` is output 0)
                reads.update(f"{name}:{i}" for i in range(1, min(total, spare)))
                spare -= total
        elif op.spelled:
            for output, count in zip(op.output_names, counts, strict=True):
                if count == 1:
                    reads.add(f"{name}:{output}:0")
                elif count and spare > 0:
                    reads.update(f"{name}:{output}:{i}" for i in range(min(count, spare)))
                    spare -= count
    return ordered


def check_inputs(node, op_defs, outputs, at, args) -> set[str]:
    """Check the inputs' order, count and sources; returns the nodes `node` waits for (a while
    loop's NextIteration edge left out)."""
    inputs = list(node.input)
    controls = [i[1:] for i in inputs if i[:1] == "^"] if "^" in "".join(inputs) else []
    data = inputs[:len(inputs) - len(controls)]
    if controls:
        if any(i[:1] == "^" for i in data):
            late = next(i for i in inputs[[i[:1] for i in inputs].index("^"):] if i[:1] != "^")
            raise InputError(f"{at} lists data input '{late}' after a control input; data inputs "
                             f"come first, {_FIX}")
        if args is not None:  # in a function body `^arg` waits for an argument (grad functions)
            controls = [c for c in controls if c not in args or c in op_defs]
        missing = [c for c in controls if c not in op_defs]
        if missing:
            raise InputError(f"{at} waits for '{missing[0]}', which is not in the graph; {_FIX}")
    deps = set(controls)
    for inp in data:
        if args is None and inp in op_defs and ":" not in inp:  # output 0 of a node
            source = inp
        else:
            source = _check_source(inp, op_defs, outputs, at, args)
        if source is not None and op_defs[source].name not in _LOOP_BACK:
            deps.add(source)
    op = op_defs[node.name]
    counts = op.input_counts(node)
    if None not in counts and sum(counts) != len(data):
        raise InputError(f"{at} has {len(data)} data input(s) but op {node.op} takes "
                         f"{sum(counts)}; {_FIX}")
    return deps


def _check_source(inp: str, op_defs, outputs, at: str, args) -> str | None:
    """The node a data input reads (None for a function argument), checked to have that output.
    In function bodies inputs are `arg` or `node:output_arg:index`."""
    if args is None:
        if ":" not in inp and inp in op_defs:  # the common case: output 0 of a node
            return inp
        source, index = split_tensor(inp)
        parts = [source, "", str(index)]
    else:
        parts = inp.split(":")
        if parts[0] in args and len(parts) <= 2:
            return None
    source = parts[0]
    if source not in op_defs:
        what = "node" if args is None else "node or argument"
        raise InputError(f"{at} reads '{inp}', but there is no {what} '{source}'; {_FIX}")
    counts = outputs[source]
    index = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0
    if args is not None:
        names = op_defs[source].output_names
        if len(parts) < 2 or parts[1] not in names:
            raise InputError(f"{at} reads '{inp}', but '{source}' has no output named "
                             f"'{''.join(parts[1:2])}' (it has {', '.join(names)}); {_FIX}")
        counts = counts[names.index(parts[1]):][:1]
    if None not in counts and index >= sum(counts):
        n = sum(counts)
        what = f"'{source}' ({op_defs[source].name})" if args is None else \
            f"'{source}' output '{parts[1]}'"
        raise InputError(f"{at} reads '{inp}' but {what} has {n} "
                         f"{'output' if args is None else 'tensor'}{'s' if n != 1 else ''}; {_FIX}")
    return source
