"""Structural checks of a GraphDef before TensorFlow sees it.

TensorFlow answers a broken graph with a crash (recursive functions), a MemoryError (a splat
Const or a Fill of terabytes) or an error far from the cause. `check_graph_def` finds these first
and raises one InputError naming the file, the node and the fix. Op definitions (arg counts,
attr types, allowed values, defaults) come from TensorFlow's own op registry; library functions
are ops too (their signature is an OpDef), and their bodies are checked like the graph.
"""

from __future__ import annotations

from graphfreeze.errors import InputError
from graphfreeze.graph.checks.loops import FIX as _FIX
from graphfreeze.graph.checks.loops import check_cycles, check_recursion
from graphfreeze.graph.checks.validate_values import check_const, check_sizes, type_name
from graphfreeze.graph.graphdefs import function_names_used, split_tensor
from graphfreeze.graph.op_libraries import op_def_of

_LOOP_BACK = ("NextIteration", "RefNextIteration")  # while-loop back edges into Merge
_FIELDS = {"string": "s", "int": "i", "float": "f", "bool": "b", "type": "type",
           "shape": "shape", "tensor": "tensor", "func": "func"}


def check_graph_def(graph_def, where: str) -> None:
    """Raise InputError for the first structural fault in `graph_def` (read from `where`)."""
    _check_versions(graph_def.versions, where)
    funcs = {f.signature.name: f for f in graph_def.library.function}
    ops = _OpDefs(funcs)
    calls = {}  # function -> the library functions it calls
    for name, func in funcs.items():
        args = {a.name for a in func.signature.input_arg}
        calls[name] = _check_body(func.node_def, ops, where, f"function '{name}', ", args)
        names, outs = args | {n.name for n in func.node_def}, [a.name for a in func.signature.output_arg]
        if set(func.ret) != set(outs):
            raise InputError(f"{where}: function '{name}' returns {sorted(func.ret)} but declares "
                             f"outputs {outs}; {_FIX}")
        for key, ref in func.ret.items():
            if ref.split(":")[0] not in names:
                raise InputError(f"{where}: function '{name}' returns '{ref}' as '{key}', but it "
                                 f"has no such node or argument; {_FIX}")
    check_recursion(calls, where)
    _check_body(graph_def.node, ops, where, "")


def _check_versions(versions, where: str) -> None:
    from graphfreeze.proto.ops import versions as registry

    tf = registry()  # the pinned TensorFlow's, without importing it
    have = tf["graph_def_version"]
    ours = f"TensorFlow {tf['tensorflow']} reads graph versions up to {have}"
    if versions.min_consumer > have:
        raise InputError(f"{where}: the graph needs a TensorFlow that reads graph version "
                         f"{versions.min_consumer} ({ours}); upgrade TensorFlow or re-export the "
                         "graph with this version")
    if versions.producer < tf["graph_def_version_min_producer"]:
        raise InputError(f"{where}: graph version {versions.producer} is too old ({ours}); "
                         "re-export the graph with a newer TensorFlow")
    if have in versions.bad_consumers:
        raise InputError(f"{where}: the graph disallows graph version {have} ({ours}); re-export "
                         "it with this TensorFlow")


class _AttrSpec:
    """What one attr of an op must be."""

    def __init__(self, attr_def):
        self.name, self.type = attr_def.name, attr_def.type
        self.is_list = self.type.startswith("list(")
        self.field = _FIELDS[self.type[5:-1] if self.is_list else self.type]
        self.required = not attr_def.HasField("default_value")
        self.minimum = attr_def.minimum if attr_def.has_minimum else None
        allowed = attr_def.allowed_values.list
        self.allowed = set(allowed.type) or set(allowed.s) or None


class _Op:
    """One op's definition as the checks need it, computed once per op type."""

    def __init__(self, op_def):
        self.name = op_def.name  # the op type, or the function's name
        self.attr_names = {a.name for a in op_def.attr}
        self.specs = [_AttrSpec(a) for a in op_def.attr]
        self.defaults = {a.name: a.default_value for a in op_def.attr
                         if a.HasField("default_value")}
        self.inputs = [(a.number_attr, a.type_list_attr) for a in op_def.input_arg]
        self.outputs = [(a.number_attr, a.type_list_attr) for a in op_def.output_arg]
        self.output_names = [a.name for a in op_def.output_arg]
        # one tensor per arg (no number_attr/type_list_attr): counted without reading the node
        self.plain_inputs, self.plain_outputs = (not any(n or t for n, t in args)
                                                 for args in (self.inputs, self.outputs))
        self.takes_functions = any(spec.field == "func" for spec in self.specs)

    def input_counts(self, node) -> list[int | None]:
        """Tensors per input arg (None: unknown, an attr placeholder in a function)."""
        return [1] * len(self.inputs) if self.plain_inputs else self._count(self.inputs, node)

    def output_counts(self, node) -> list[int | None]:
        """Tensors per output arg, as input_counts."""
        return [1] * len(self.outputs) if self.plain_outputs else self._count(self.outputs, node)

    def _count(self, args: list, node) -> list[int | None]:
        return [1 if not number and not type_list else _arg_count(number, type_list, node, self)
                for number, type_list in args]


def _arg_count(number: str, type_list: str, node, op: _Op) -> int | None:
    name = number or type_list
    value = node.attr[name] if name in node.attr else op.defaults.get(name)
    kind = value.WhichOneof("value") if value is not None else "placeholder"
    if number:
        return value.i if kind == "i" else None
    return len(value.list.type) if kind in ("list", None) else None


class _OpDefs:
    """Op type -> _Op (a library function's signature first, then TensorFlow's registry)."""

    def __init__(self, funcs: dict):
        from graphfreeze.proto.tf import types_pb2

        self.funcs = funcs
        self._ops: dict = {}
        self.known = self._ops  # op type -> _Op, or None when not (yet) found: read it first
        self.data_types = set(types_pb2.DataType.values()) - {types_pb2.DT_INVALID}

    def get(self, op: str, at: str = "") -> _Op | None:  # at: the node, to load a library
        if self._ops.get(op) is None and (op not in self._ops or at):
            op_def = self.funcs[op].signature if op in self.funcs else op_def_of(op, at)
            self._ops[op] = _Op(op_def) if op_def is not None else None
        return self._ops[op]


def _check_body(nodes, ops: _OpDefs, where: str, scope: str, args: set | None = None) -> list:
    """Check the graph's nodes (`args` None) or a function body's (`args`: its argument names);
    returns the library functions they call (by op type or by function-valued attrs: `f`,
    `then_branch`, `body`, ...)."""
    by_name: dict = {}
    for node in nodes:
        if not node.name:
            raise InputError(f"{where}: {scope}a node ({node.op or 'no op'}) has no name; {_FIX}")
        if node.name in by_name:
            raise InputError(f"{where}: {scope}node name '{node.name}' is used twice; names must "
                             f"be unique, {_FIX}")
        by_name[node.name] = node
    op_of, outputs, ats, called = {}, {}, {}, set()
    known = ops.known
    for node in nodes:
        node_name, op_type = node.name, node.op
        op = known.get(op_type) or ops.get(op_type, f"{where}: {scope}node '{node_name}'")
        if op is None:
            raise InputError(f"{where}: {scope}node '{node_name}' has op '{op_type}', which "
                             "neither TensorFlow nor the graph's function library defines (a "
                             "custom op?); re-export the graph without it")
        at = ats[node_name] = f"{where}: {scope}node '{node_name}' ({op_type})"
        is_call = op_type in ops.funcs
        if is_call:
            called.add(op_type)
        else:
            _check_attrs(node, op, at, args is not None, ops)
        if op.takes_functions or is_call:
            for name in sorted(function_names_used(node.attr.values())):
                if name and ops.get(name) is None:
                    raise InputError(f"{at} calls function '{name}', which the graph's function "
                                     f"library does not define; {_FIX} with its functions")
                if name in ops.funcs:
                    called.add(name)
        if op_type == "Const":
            check_const(node, at)
        op_of[node_name] = op
        outputs[node_name] = op.output_counts(node)
    deps = {node.name: _check_inputs(node, op_of, outputs, ats[node.name], args)
            for node in nodes}
    check_cycles(deps, where, scope)
    if args is None:
        check_sizes(nodes, by_name, where)
    return sorted(called)


def _check_attrs(node, op: _Op, at: str, in_function: bool, ops: _OpDefs) -> None:
    """Raise on a missing, unknown or ill-typed attr."""
    attrs = node.attr
    present = set(attrs)
    for name in present - op.attr_names:
        if not name.startswith("_"):
            raise InputError(f"{at} has attr '{name}', which op {node.op} does not define; "
                             f"{_FIX} with this TensorFlow")
    for spec in op.specs:
        if spec.name not in present:
            if spec.required:
                raise InputError(f"{at} lacks attr '{spec.name}' ({spec.type}); {_FIX}")
            continue
        value = attrs[spec.name]
        kind = value.WhichOneof("value")
        if kind == "placeholder" and in_function:
            continue
        if spec.is_list:
            fields = [f.name for f, _ in value.list.ListFields()] if kind == "list" else []
            wrong = kind not in ("list", None) or any(f != spec.field for f in fields)
            items = list(getattr(value.list, spec.field)) if fields else []
        else:
            wrong, items = kind != spec.field, [getattr(value, spec.field)] if kind else []
        if wrong:
            raise InputError(f"{at} has attr '{spec.name}' of the wrong type ({kind or 'empty'}, "
                             f"op {node.op} wants {spec.type}); {_FIX}")
        if spec.minimum is not None and (spec.is_list or spec.field == "i"):
            got = len(items) if spec.is_list else items[0]
            if got < spec.minimum:
                raise InputError(f"{at} has attr '{spec.name}' = {got}, below the minimum "
                                 f"{spec.minimum}; {_FIX}")
        for item in items:
            if spec.field == "type" and (item not in ops.data_types or
                                         spec.allowed and item not in spec.allowed):
                raise InputError(f"{at} has attr '{spec.name}' = {type_name(item)}, not a type "
                                 f"op {node.op} allows; {_FIX}")
            if spec.field == "s" and spec.allowed and item not in spec.allowed:
                raise InputError(f"{at} has attr '{spec.name}' = {item!r}, not one of "
                                 f"{sorted(a.decode() for a in spec.allowed)}; {_FIX}")
            if spec.field == "shape" and (item.unknown_rank and item.dim or
                                          any(d.size < -1 for d in item.dim)):
                raise InputError(f"{at} has attr '{spec.name}' with an invalid shape; {_FIX}")


def _check_inputs(node, op_defs, outputs, at, args) -> set[str]:
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
