"""A probe graph: one node of each op type copied out of a big graph, its tensor inputs as
placeholders of their inferred shapes and its small constant inputs kept. What the per-format
gap checks convert, so judging a graph costs one import of it, not a conversion of all of it."""

from __future__ import annotations

from dataclasses import dataclass

_LAST: list = []  # (graph_def, imported skeleton): the gap checks of one inspect share one import


@dataclass
class Probe:
    graph: object  # GraphDef of the probe nodes and their inputs
    inputs: list  # [(placeholder name, shape)]
    outputs: list  # probe node names, one per checked op
    checked: list  # op types probed, in output order


def imported(graph_def):
    """The tf.Graph of `graph_def`'s skeleton, imported once for the last graph asked about."""
    from graphfreeze.graph.session import import_graph
    from graphfreeze.graph.skeleton import skeleton

    if not _LAST or _LAST[0][0] is not graph_def:
        _LAST[:] = [(graph_def, import_graph(skeleton(graph_def)))]
    return _LAST[0][1]


def forget() -> None:
    """Let go of the last imported graph (once a graph's gap checks are done)."""
    _LAST.clear()


def probe_graph(graph_def, ops) -> Probe:
    """The probe of `ops` (main-graph nodes only; an op whose inputs have unknown rank or are
    resources is left out of `checked`)."""
    from graphfreeze.graph.graphdefs import nodes_by_name

    by_name = nodes_by_name(graph_def)
    chosen = {}
    for node in graph_def.node:
        if node.op in ops and node.op not in chosen:
            chosen[node.op] = node
    graph = imported(graph_def)
    probe = type(graph_def)()
    probe.versions.CopyFrom(graph_def.versions)
    result = Probe(probe, [], [], [])
    for op, node in sorted(chosen.items()):
        pieces = _probe_inputs(graph, by_name, node, f"probe_{op}")
        if pieces is None:
            continue
        for piece, shape in pieces:
            probe.node.add().CopyFrom(piece)
            if shape is not None:
                result.inputs.append((piece.name, shape))
        new = probe.node.add()
        new.CopyFrom(node)
        new.name, new.device = f"probe_{op}", ""
        del new.input[:]
        new.input.extend(piece.name for piece, _ in pieces)
        result.outputs.append(new.name)
        result.checked.append(op)
    return result


def _probe_inputs(graph, by_name, node, prefix: str):
    """[(NodeDef, placeholder shape or None)] standing in for `node`'s data inputs, or None."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import is_control, split_tensor
    from graphfreeze.graph.skeleton import is_big_const
    from tensorflow.core.framework import node_def_pb2

    pieces = []
    for k, inp in enumerate(i for i in node.input if not is_control(i)):
        src, index = split_tensor(inp)
        source = by_name.get(src)
        piece = node_def_pb2.NodeDef(name=f"{prefix}/in{k}")
        if source is not None and source.op == "Const" and not is_big_const(source):
            piece.op = "Const"
            piece.attr["dtype"].CopyFrom(source.attr["dtype"])
            piece.attr["value"].CopyFrom(source.attr["value"])
            pieces.append((piece, None))
            continue
        tensor = graph.get_tensor_by_name(f"{src}:{index}")
        if tensor.shape.rank is None or tensor.dtype in (tf.resource, tf.variant):
            return None
        shape = [1 if d is None else d for d in tensor.shape.as_list()]
        piece.op = "Placeholder"
        piece.attr["dtype"].type = tensor.dtype.base_dtype.as_datatype_enum
        piece.attr["shape"].shape.CopyFrom(tf.TensorShape(shape).as_proto())
        pieces.append((piece, shape))
    return pieces
