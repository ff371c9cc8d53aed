"""Structural checks of a GraphDef before TensorFlow sees it.

TensorFlow answers a broken graph with a crash (recursive functions), a MemoryError (a splat
Const or a Fill of terabytes) or an error far from the cause. `check_graph_def` finds these first
and raises one InputError naming the file, the node and the fix. Op definitions (arg counts,
attr types, allowed values, defaults) come from TensorFlow's own op registry; library functions
are ops too (their signature is an OpDef), and their bodies are checked like the graph.
"""

from __future__ import annotations

import functools

from graphfreeze.errors import InputError
from graphfreeze.graph.checks.loops import FIX as _FIX
from graphfreeze.graph.checks.loops import check_cycles, check_recursion
from graphfreeze.graph.checks.validate_inputs import check_inputs, inputs_in_order, node_at
from graphfreeze.graph.checks.validate_values import check_const_once, check_sizes, type_name
from graphfreeze.graph.graphdefs import function_names_used, functions_reached, reachable
from graphfreeze.graph.op_libraries import op_def_of

_FIELDS = {"string": "s", "int": "i", "float": "f", "bool": "b", "type": "type",
           "shape": "shape", "tensor": "tensor", "func": "func"}


def check_graph_def(graph_def, where: str, roots: list[str] | None = None) -> None:
    """Raise InputError for the first structural fault in `graph_def` (read from `where`); with
    `roots` (node names), only in the nodes they depend on and the functions those call: what a
    run keeping them reads (a conversion checks no more of a training graph than it uses)."""
    _check_versions(graph_def.versions, where)
    funcs = {f.signature.name: f for f in graph_def.library.function}
    ops = _OpDefs(funcs)
    if roots is None:
        _check_functions(funcs, funcs, ops, where)
        _check_body(graph_def.node, ops, where, "")
        return
    if len({node.name for node in graph_def.node}) < len(graph_def.node):
        _check_names(list(graph_def.node), where, "")  # (which node a name means is unclear)
    needed = reachable(graph_def, roots)
    nodes = [n for n in graph_def.node if n.name in needed]
    _check_body(nodes, ops, where, "")  # then every function they reach as the passes see it
    _check_functions(funcs, sorted(functions_reached(funcs, nodes)), ops, where)


def _check_functions(funcs: dict, names, ops: _OpDefs, where: str) -> None:
    """Check the library functions `names` and those they call: bodies, returns, recursion."""
    calls = {}  # function -> the library functions it calls
    todo = list(names)[::-1]  # (in the order given)
    while todo:
        name = todo.pop()
        if name in calls:
            continue
        func = funcs[name]
        args = {a.name for a in func.signature.input_arg}
        calls[name] = _check_body(func.node_def, ops, where, f"function '{name}', ", args)
        todo.extend(calls[name])
        known, outs = args | {n.name for n in func.node_def}, [a.name for a in func.signature.output_arg]
        if set(func.ret) != set(outs):
            raise InputError(f"{where}: function '{name}' returns {sorted(func.ret)} but declares "
                             f"outputs {outs}; {_FIX}")
        for key, ref in func.ret.items():
            if ref.split(":")[0] not in known:
                raise InputError(f"{where}: function '{name}' returns '{ref}' as '{key}', but it "
                                 f"has no such node or argument; {_FIX}")
    check_recursion(calls, where)


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
        # how a node's value is seen to pass at a glance (else _check_attrs decides): a type
        # among `types`, the kind alone (nothing else to check), or bytes already checked
        if self.field == "type" and not self.is_list:
            self.quick, self.types = "type", _data_types() & (self.allowed or _data_types())
        elif not self.is_list and (self.field in ("tensor", "func", "b", "f") or
                                   self.field == "i" and self.minimum is None or
                                   self.field == "s" and not self.allowed):
            self.quick = "kind"
        else:
            self.quick, self.passed = "bytes", set()


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
        self.by_name = {spec.name: spec for spec in self.specs}
        self.required = sum(spec.required for spec in self.specs)
        self.n_inputs = len(self.inputs) if self.plain_inputs else None
        self.n_outputs = len(self.outputs) if self.plain_outputs else None
        self._ones = [1] * len(self.outputs)  # shared: output counts are only read
        # outputs spelled `node:output:index` in function bodies (one spelling per name)
        self.spelled = (len(set(self.output_names)) == len(self.output_names) and
                        not any(":" in name for name in self.output_names))

    def input_counts(self, node) -> list[int | None]:
        """Tensors per input arg (None: unknown, an attr placeholder in a function)."""
        return [1] * len(self.inputs) if self.plain_inputs else self._count(self.inputs, node)

    def output_counts(self, node) -> list[int | None]:
        """Tensors per output arg, as input_counts."""
        return self._ones if self.plain_outputs else self._count(self.outputs, node)

    def passes(self, attrs) -> bool:
        """True if a node's `attrs` surely pass _check_attrs; False: let it decide."""
        by_name, required = self.by_name, 0
        for name in attrs:  # (items() is slower: a Python generator, every value read)
            spec = by_name.get(name)
            if spec is None:
                if name[:1] != "_":
                    return False
                continue
            quick, value = spec.quick, attrs[name]
            if quick == "type":
                if value.type not in spec.types:  # 0 when the value is not a type
                    return False
            elif quick == "kind":
                if value.WhichOneof("value") != spec.field:
                    return False
            elif value.SerializeToString() not in spec.passed:
                return False
            required += spec.required
        return required == self.required

    def remember(self, attrs) -> None:
        """Remember the values of `attrs`, which passed _check_attrs, that `passes` reads as
        bytes (not an attr placeholder: what passes in a function may not in the graph)."""
        for spec in self.specs:
            if spec.quick == "bytes" and spec.name in attrs:
                value = attrs[spec.name]
                if value.WhichOneof("value") != "placeholder":
                    spec.passed.add(value.SerializeToString())

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


@functools.cache
def _data_types() -> frozenset:
    from graphfreeze.proto.tf import types_pb2

    return frozenset(types_pb2.DataType.values()) - {types_pb2.DT_INVALID}


class _OpDefs:
    """Op type -> _Op (a library function's signature first, then TensorFlow's registry)."""

    def __init__(self, funcs: dict):
        self.funcs = funcs
        self._ops: dict = {}
        self.known = self._ops  # op type -> _Op, or None when not (yet) found: read it first
        self.consts: set = set()  # small Consts' (dtype, value bytes) check_const passed

    def get(self, op: str, at: str = "") -> _Op | None:  # at: the node, to load a library
        if self._ops.get(op) is None and (op not in self._ops or at):
            op_def = self.funcs[op].signature if op in self.funcs else op_def_of(op, at)
            self._ops[op] = _Op(op_def) if op_def is not None else None
        return self._ops[op]


def _check_body(nodes, ops: _OpDefs, where: str, scope: str, args: set | None = None) -> list:
    """Check the graph's nodes (`args` None) or a function body's (`args`: its argument names);
    returns the library functions they call (by op type or by function-valued attrs: `f`,
    `then_branch`, `body`, ...)."""
    nodes = list(nodes)
    names = [node.name for node in nodes]
    by_name = dict(zip(names, nodes, strict=True))
    if len(by_name) < len(nodes) or "" in by_name:
        _check_names(nodes, where, scope)
    op_of, outputs, called = {}, {}, set()
    known, funcs, consts = ops.known, ops.funcs, ops.consts
    for node, node_name in zip(nodes, names, strict=True):
        op_type = node.op
        op = known.get(op_type) or ops.get(op_type, f"{where}: {scope}node '{node_name}'")
        if op is None:
            raise InputError(f"{where}: {scope}node '{node_name}' has op '{op_type}', which "
                             "neither TensorFlow nor the graph's function library defines (a "
                             "custom op?); re-export the graph without it")
        is_call = op_type in funcs
        if is_call:
            called.add(op_type)
        elif not op.passes(node.attr):
            _check_attrs(node, op, node_at(where, scope, node), args is not None)
            op.remember(node.attr)
        if op.takes_functions or is_call:
            for name in sorted(function_names_used(node.attr.values())):
                if name and name not in funcs and ops.get(name) is None:
                    raise InputError(f"{node_at(where, scope, node)} calls function '{name}', which "
                                     f"the graph's function library does not define; {_FIX} "
                                     "with its functions")
                if name in funcs:
                    called.add(name)
        if op_type == "Const":
            check_const_once(node, is_call, consts, where, scope)
        op_of[node_name] = op
        outputs[node_name] = op.output_counts(node)
    if not inputs_in_order(nodes, names, op_of, outputs, where, scope, args):
        check_cycles({node.name: check_inputs(node, op_of, outputs, node_at(where, scope, node),
                                              args) for node in nodes}, where, scope)
    if args is None:
        check_sizes(nodes, by_name, where)
    return sorted(called)


def _check_names(nodes, where: str, scope: str) -> None:
    seen = set()
    for node in nodes:
        if not node.name:
            raise InputError(f"{where}: {scope}a node ({node.op or 'no op'}) has no name; {_FIX}")
        if node.name in seen:
            raise InputError(f"{where}: {scope}node name '{node.name}' is used twice; names must "
                             f"be unique, {_FIX}")
        seen.add(node.name)


def _check_attrs(node, op: _Op, at: str, in_function: bool) -> None:
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
            if spec.field == "type" and (item not in _data_types() or
                                         spec.allowed and item not in spec.allowed):
                raise InputError(f"{at} has attr '{spec.name}' = {type_name(item)}, not a type "
                                 f"op {node.op} allows; {_FIX}")
            if spec.field == "s" and spec.allowed and item not in spec.allowed:
                raise InputError(f"{at} has attr '{spec.name}' = {item!r}, not one of "
                                 f"{sorted(a.decode() for a in spec.allowed)}; {_FIX}")
            if spec.field == "shape" and (item.unknown_rank and item.dim or
                                          any(d.size < -1 for d in item.dim)):
                raise InputError(f"{at} has attr '{spec.name}' with an invalid shape; {_FIX}")
