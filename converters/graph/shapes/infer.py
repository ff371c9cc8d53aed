"""Run the shape functions over a graph as TensorFlow's importer does: node by node in input
order, each input's type checked against the op's, each output's shape merged with the node's
`_output_shapes`, colocations and names checked. `ImportFault` is what the importer would refuse
(its words); `Unsupported` leaves the graph to TensorFlow."""

from __future__ import annotations

import re

from graphfreeze.graph.graphdefs import colocations
from graphfreeze.graph.shapes import array, math, nn, resources  # noqa: F401 (register)
from graphfreeze.graph.shapes.context import FUNCTIONS, Context, PartialShape, shape_of
from graphfreeze.graph.shapes.dims import ShapeError, Unsupported, merge, text
from graphfreeze.proto import dtypes
from graphfreeze.proto.ops import arg_types

_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./-]*(>[A-Za-z0-9.][A-Za-z0-9_./-]*)*\Z")
_KNOWN_NOTHING = ("Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "VarHandleOp",
                  "ReadVariableOp", "VariableV2", "RandomUniform", "RandomStandardNormal")
# (values no importer works out)


class ImportFault(Exception):
    """What TensorFlow's importer would refuse the graph with (one line, its words)."""


def infer(graph_def, wanted: list[str] | None = None) -> dict:
    """{node: [(dtype, shape), ...]} for the nodes `wanted` need (every node: None); raises
    ImportFault or Unsupported."""
    from graphfreeze.graph.graphdefs import split_tensor

    by_name = {n.name: n for n in graph_def.node}
    order = _order(by_name, wanted)
    unknown = sorted({by_name[n].op for n in order} - set(FUNCTIONS))
    if unknown:
        raise Unsupported(f"no shape function for {', '.join(unknown)}")
    names = set(by_name)
    version = graph_def.versions.producer
    done: dict = {}
    handles: dict = {}  # (node, index) -> (dtype, shape) of the resource it is
    for name in order:
        node = by_name[name]
        sources = [split_tensor(i) for i in node.input if not i.startswith("^")]
        _check_node(node, names)
        op_def = _op_def(node.op)
        expected, outputs = (_types(args, node, op_def) for args in (op_def.input_arg,
                                                                       op_def.output_arg))
        if len(expected) != len(sources):
            raise Unsupported("input count")
        got = []
        for i, ((src, index), want) in enumerate(zip(sources, expected, strict=True)):
            have = done[src][index][0] if index < len(done[src]) else None
            if have is None:
                raise ImportFault(f"Node '{name}': input '{node.input[i]}' names a missing "
                                  "output")
            if have != want and not (want < 100 and have == want + 100):
                raise ImportFault(f"Input {i} of node {name} was passed {dtypes.name(have)} "
                                  f"from {node.input[i]} incompatible with expected "
                                  f"{dtypes.name(want)}.")
            got.append(done[src][index][1])
        context = Context(node, op_def, got, [t % 100 if t > 100 else t for t in expected],
                          [handles.get(s) for s in sources],
                          [_value_of(by_name, done, s) for s in sources], len(outputs),
                          version)
        try:
            shapes = FUNCTIONS[node.op](context)
        except ShapeError as err:
            raise ImportFault(f"{err} for node '{name}' with input shapes: "
                              f"{', '.join(text(s) for s in got)}.") from None
        shapes = _with_recorded(node, list(shapes), len(outputs))
        done[name] = list(zip(outputs, shapes, strict=True))
        for index, handle in context.output_handles.items():
            handles[(name, index)] = handle
    return done


def _order(by_name: dict, wanted: list[str] | None) -> list[str]:
    """The nodes `wanted` reach through data inputs (all: None), each after its inputs."""
    from graphfreeze.graph.graphdefs import split_tensor

    order, state = [], {}
    for root in (by_name if wanted is None else wanted):
        stack = [root]
        while stack:
            name = stack[-1]
            if state.get(name) == 2:
                stack.pop()
                continue
            if name not in by_name:
                raise Unsupported(f"no node {name}")
            pending = [s for s, _ in (split_tensor(i) for i in by_name[name].input
                                      if not i.startswith("^")) if state.get(s) != 2]
            if state.get(name) == 1 or not pending:
                if pending:
                    raise Unsupported("a cycle")
                state[name] = 2
                order.append(name)
                stack.pop()
                continue
            state[name] = 1
            stack.extend(pending)
    return order


def _check_node(node, names: set) -> None:
    if not _NAME.match(node.name):
        raise ImportFault(f"Node '{node.name}': Node name contains invalid characters")
    if node.device:
        raise Unsupported("a device")  # TensorFlow parses it: leave that to it
    try:
        located = colocations(node)
    except ValueError:
        raise ImportFault(f"Node '{node.name}' has a _class attr that is not a list of "
                          "strings") from None
    for other in located:
        if other not in names:
            raise ImportFault(f"Node '{node.name}' expects to be colocated with unknown node "
                              f"'{other}'")


def _op_def(op: str):
    from graphfreeze.proto.ops import op_def

    found = op_def(op)
    if found is None:
        raise Unsupported(f"op {op}")
    return found


def _types(args, node, op_def) -> list[int]:
    """The dtypes of an OpDef's inputs or outputs on `node`, one per tensor (refs + 100)."""
    try:
        return arg_types(args, node, op_def)
    except KeyError as missing:
        raise Unsupported(f"attr {missing.args[0]}") from None


def _value_of(by_name: dict, done: dict, source: tuple):
    """A function giving the value TensorFlow's importer knows of `source` (None: none)."""
    def value():
        from graphfreeze.graph.skeleton import is_big_const

        node = by_name[source[0]]
        if node.op == "Const" and not is_big_const(node):
            from graphfreeze.proto.tensors import to_numpy
            try:
                return to_numpy(node.attr["value"].tensor)
            except ValueError:
                raise Unsupported("a constant numpy cannot hold") from None
        if node.op == "Shape" and node.input:
            import numpy as np

            shape = _input_shape(by_name, done, node)
            if shape is None or None in shape:
                return PartialShape(shape)  # known as a shape, not as a value
            kind = done[node.name][0][0]
            return np.array(shape, dtype=np.int64 if kind == 9 else np.int32)
        if node.op in _KNOWN_NOTHING:
            return None
        raise Unsupported(f"the value of {node.op} {node.name}")
    return value


def _input_shape(by_name: dict, done: dict, node):
    from graphfreeze.graph.graphdefs import split_tensor

    src, index = split_tensor(node.input[0])
    return done[src][index][1]


def _with_recorded(node, shapes: list, count: int) -> list:
    """The shapes merged with the node's `_output_shapes`, as the importer merges them."""
    if len(shapes) != count:
        raise Unsupported("output count")
    if "_output_shapes" not in node.attr:
        return shapes
    value = node.attr["_output_shapes"]
    fields = value.list.ListFields() if value.WhichOneof("value") == "list" else None
    if fields is None or fields and fields[0][0].name != "shape" or len(fields) > 1:
        raise Unsupported("an _output_shapes attr of another kind")
    recorded = list(value.list.shape)
    if len(recorded) < count:
        raise ImportFault(f"Node '{node.name}' has {count} outputs but the _output_shapes "
                          f"attribute specifies shapes for {len(recorded)} outputs")
    for i in range(count):
        try:
            shapes[i] = merge(shapes[i], shape_of(recorded[i]))
        except ShapeError as err:
            raise ImportFault(f"Node '{node.name}' has an _output_shapes attribute inconsistent "
                              f"with the GraphDef for output #{i}: {err}") from None
    return shapes
