"""What TensorFlow's `convert_to_constants` does to a variable's readers, done without TensorFlow.

Each variable node becomes a Const (its value set later); then, following the value as the
converter does (`_Node.convert_variable_to_constant` and its subclasses): a ReadVariableOp becomes
an Identity, an Identity/Switch/Enter/Exit/NextIteration takes the value's type, an `If`/`Case`/
call passes it into its functions, whose argument becomes that type and whose reads are
converted the same way. A function it changes is renamed `<name>_frozen_<N>`, N counting the
library in the converter's order (`frozen_names`, which TensorFlow's converter is given too in
place of its process-wide counter, so both name alike). `While` loops and resource gathers:
None, for TensorFlow's converter.
"""

from __future__ import annotations

_PASS_ON = ("Enter", "Exit", "Identity", "NextIteration", "Switch", "_SwitchN")
# caller op -> (its first input that is a function argument, the attr typing them, func attrs)
_CALLERS = {"If": (1, "Tin", ("then_branch", "else_branch")),
            "StatelessIf": (1, "Tin", ("then_branch", "else_branch")),
            "Case": (1, "Tin", ("branches",)),
            "PartitionedCall": (0, "Tin", ("f",)), "StatefulPartitionedCall": (0, "Tin", ("f",))}
_ITS_OWN = ("While", "StatelessWhile", "ResourceGather", "ResourceGatherNd")
# every caller's function attrs (the converter renames them when it first edits the caller)
_FUNC_ATTRS = {**{op: attrs for op, (_, _, attrs) in _CALLERS.items()},
               "While": ("body", "cond"), "StatelessWhile": ("body", "cond")}


def _funcs(node, attrs):
    """The function references (NameAttrList) in `node`'s attrs `attrs`, in order."""
    for name in attrs:
        if name in node.attr:
            value = node.attr[name]
            yield from [value.func] if value.HasField("func") else \
                value.list.func if value.HasField("list") else []


class _Unsupported(Exception):
    """A reader only TensorFlow's converter rewrites."""


def frozen_names(names) -> dict[str, str]:
    """Function name -> its converted name, numbered in the order the converter sorts them."""
    parsed = []
    for name in names:
        base, _, number = name.rpartition("_")
        parsed.append((int(number), base, name) if base and number.isnumeric() else
                      (-1, name, name))
    return {name: f"{base}_frozen_{k}" for k, (_, base, name) in enumerate(sorted(parsed))}


class _Scope:
    """The main graph (function None) or one function body: its nodes and their readers."""

    def __init__(self, nodes, function=None):
        self.function = function
        self.nodes = {n.name: n for n in nodes}
        args = [a.name for a in function.signature.input_arg] if function is not None else []
        self.readers: dict[object, list] = {}  # node name or arg index -> [(node, input index)]
        for node in nodes:
            for index, name in enumerate(node.input):
                if name.startswith("^"):
                    continue
                parts = name.split(":")
                numbered = len(parts) > 1 and parts[-1].isnumeric()
                if function is None or numbered and parts[-1] != "0" or parts[0] in self.nodes:
                    key = parts[0]
                elif parts[0] in args:
                    key = args.index(parts[0])
                else:
                    raise _Unsupported(name)
                self.readers.setdefault(key, []).append((node, index))


class _Conversion:
    def __init__(self, graph_def):
        self.graph = graph_def
        self.functions = {f.signature.name: f for f in graph_def.library.function}
        self.names = frozen_names(self.functions)
        self.main = _Scope(graph_def.node)
        self.scopes = {name: _Scope(f.node_def, f) for name, f in self.functions.items()}
        self.renamed: set[str] = set()
        self.originals: dict[str, str] = {}  # a renamed function's new name -> its name
        self.callers: set[int] = set()

    def touch(self, scope: _Scope) -> None:
        """A function the conversion changes gets its new name (once)."""
        if scope.function is not None and scope.function.signature.name in self.names and \
                scope.function.signature.name not in self.renamed:
            old = scope.function.signature.name
            scope.function.signature.name = self.names[old]
            self.renamed.add(old)
            self.originals[self.names[old]] = old

    def follow(self, scope: _Scope, key, dtype: int, depth: int = 0) -> None:
        """Convert every reader of `key` (a node name, or an argument's index) in `scope`."""
        if depth > 500:
            raise _Unsupported("deep")
        for node, index in scope.readers.get(key, ()):
            if node.op in _ITS_OWN:
                raise _Unsupported(node.op)
            if node.op == "ReadVariableOp":
                self.read_variable(scope, node)
            elif node.op in _PASS_ON:
                self.touch(scope)
                attr = node.attr["T"] if "T" in node.attr else None
                if attr is not None and attr.HasField("list") and index < len(attr.list.type):
                    attr.list.type[index] = dtype
                elif attr is not None and attr.HasField("type") and index == 0:
                    attr.type = dtype
                else:
                    raise _Unsupported(node.op)  # TensorFlow's converter refuses it: said by it
                node.attr.pop("_output_shapes", None)
                self.follow(scope, node.name, dtype, depth + 1)
            elif node.op in _CALLERS:
                self.call(scope, node, index, dtype, depth)

    def read_variable(self, scope: _Scope, node) -> None:
        if node.op != "ReadVariableOp":
            return  # converted already
        self.touch(scope)
        kept = type(node)(name=node.name, op="Identity", input=node.input[:1])
        kept.attr["T"].type = node.attr["dtype"].type
        if "_class" in node.attr:
            kept.attr["_class"].CopyFrom(node.attr["_class"])
        node.CopyFrom(kept)
        if scope.function is not None:  # its readers named its output `value`: now `output`
            for reader, index in scope.readers.get(node.name, ()):
                self.first_sight(reader)  # (as the converter edits it: a caller's names too)
                parts = reader.input[index].split(":")
                if len(parts) > 1 and parts[1] == "value":
                    parts[1] = "output"
                    reader.input[index] = ":".join(parts)

    def first_sight(self, node) -> None:
        """A caller the converter edits for the first time gets the new names of the functions
        renamed so far (and keeps the others' old names, as the converter's copy does)."""
        if node.op not in _FUNC_ATTRS or id(node) in self.callers:
            return
        self.callers.add(id(node))
        for func in _funcs(node, _FUNC_ATTRS[node.op]):
            if func.name in self.renamed:
                func.name = self.names[func.name]

    def call(self, scope: _Scope, node, index: int, dtype: int, depth: int) -> None:
        first, types, attrs = _CALLERS[node.op]
        called = [f.name for f in _funcs(node, attrs)]
        if index >= first:
            for name in called:
                scope_of = self.scopes.get(self.originals.get(name, name))
                if scope_of is None:
                    raise _Unsupported(name)
                self.argument(scope_of, index - first, dtype, depth + 1)
        self.touch(scope)
        self.first_sight(node)
        if index >= first:
            attr = node.attr[types]
            if attr.HasField("list") and index - first < len(attr.list.type):
                attr.list.type[index - first] = dtype
            elif attr.HasField("type") and index == first:
                attr.type = dtype
            else:
                raise _Unsupported(node.op)

    def argument(self, scope: _Scope, index: int, dtype: int, depth: int) -> None:
        self.follow(scope, index, dtype, depth)
        self.touch(scope)
        function = scope.function
        function.signature.input_arg[index].type = dtype
        if "_input_shapes" in function.attr:
            shape = function.attr["_input_shapes"].list.shape[index]
            shape.unknown_rank = True
            del shape.dim[:]
        arg_attrs = function.arg_attr[index].attr  # (the converter adds the entry, so do we)
        if "_output_shapes" in arg_attrs:
            shape = arg_attrs["_output_shapes"].list.shape[0]
            shape.unknown_rank = True
            del shape.dim[:]


def rewired(graph_def, dtypes: dict[str, int]):
    """`graph_def` (owned) with each variable in `dtypes` a Const without a value yet and its
    readers converted; None when a reader needs TensorFlow's converter (then the graph may be
    half edited: pass a copy)."""
    try:
        conversion = _Conversion(graph_def)
        for name, dtype in dtypes.items():
            node = conversion.main.nodes[name]
            node.Clear()
            node.name, node.op = name, "Const"
            node.attr["dtype"].type = dtype
            node.attr["value"].tensor.dtype = dtype
            conversion.follow(conversion.main, name, dtype)
    except _Unsupported:
        return None
    return graph_def


_GATHERS = {"ResourceGather": "GatherV2", "ResourceGatherNd": "GatherNd"}
ASSIGNS = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")
_RESOURCE = 20


def finish_readers(graph_def) -> None:
    """What TensorFlow's converter leaves of a frozen variable's readers, done in place (as
    tf2onnx does after it): a resource gather whose handle became the value (the converter skips
    those inside functions, tensorflow#51488: a `While` body reading an embedding) becomes
    GatherV2/GatherNd; an assign to it (a layer called in training mode updating its
    statistics: a frozen graph has no state to update) is dropped (one read after is refused
    before, assign_reads.refuse_assign_then_read)."""
    _finish(graph_def.node, None)
    for function in graph_def.library.function:
        _finish(function.node_def, function)


def _finish(nodes, function) -> None:
    by_name = {n.name: n for n in nodes}
    args = {a.name: a.type for a in function.signature.input_arg} if function else {}

    def is_value(edge: str) -> bool:
        """`edge` is known to carry a tensor, not a resource."""
        name, *rest = edge.split(":")
        if name in args and not rest:
            return args[name] != _RESOURCE
        node = by_name.get(name)
        key = None if node is None else "T" if "T" in node.attr else \
            "dtype" if node.op in ("Const", "Placeholder", "ReadVariableOp") else None
        if key is None:
            return False
        attr, index = node.attr[key], int(rest[-1]) if rest and rest[-1].isnumeric() else 0
        if attr.HasField("list"):
            return index < len(attr.list.type) and attr.list.type[index] != _RESOURCE
        return attr.HasField("type") and attr.type != _RESOURCE

    dropped = set()
    for node in list(nodes):
        if node.op in _GATHERS and is_value(node.input[0]):
            _gather(nodes, node, function is not None)
        elif node.op in ASSIGNS and is_value(node.input[0]):
            dropped.add(node.name)
    if not dropped:
        return
    kept = [n for n in nodes if n.name not in dropped]
    del nodes[:]
    nodes.extend(kept)
    for node in nodes:
        controls = [i for i in node.input if i.startswith("^") and i[1:] in dropped]
        for name in controls:
            node.input.remove(name)
    if function is not None:
        for key in [k for k, v in function.control_ret.items() if v in dropped]:
            del function.control_ret[key]
            function.signature.control_output.remove(key)


def _gather(nodes, node, in_function: bool) -> None:
    """`node` (a resource gather) made the gather of the value, as the converter makes one
    outside functions (its `batch_dims` kept: GatherV2 takes it too)."""
    import numpy as np
    from graphfreeze.graph.consts import make_const

    batch_dims = node.attr["batch_dims"].i if "batch_dims" in node.attr else 0
    op, inputs = _GATHERS[node.op], list(node.input)
    kept = type(node)(name=node.name, op=op)
    kept.attr["Tparams"].type = node.attr["dtype"].type
    kept.attr["Tindices"].type = node.attr["Tindices"].type
    if op == "GatherV2":
        index_type = np.int64 if node.attr["Tindices"].type == 9 else np.int32
        axis = make_const(f"{node.name}/axis", np.array(batch_dims, index_type))
        nodes.add().CopyFrom(axis)
        inputs.insert(2, f"{axis.name}:output:0" if in_function else axis.name)
        kept.attr["Taxis"].type = axis.attr["dtype"].type
        kept.attr["batch_dims"].i = batch_dims
    if "_class" in node.attr:
        kept.attr["_class"].CopyFrom(node.attr["_class"])
    kept.input.extend(inputs)
    node.CopyFrom(kept)
