"""The inference subgraph: the original graph cut to what the outputs need, the inputs a user
chose (any tensor) turned into placeholders, with the shapes the user fixed
(`--inputs x:0[1,224,224,3]`)."""

from __future__ import annotations

from graphfreeze.errors import InputError
from graphfreeze.graph.graphdefs import extract


def inference_subgraph(graph_def, keep: list[str], inputs):
    """`graph_def` cut to `keep` (output and input node names) with `inputs` (TensorRefs) as
    placeholders; never the caller's proto (copied when nothing is cut)."""
    cut = extract(graph_def, keep, stop_at=[t.node for t in inputs])
    if cut is graph_def:  # nothing cut away: copy before editing
        cut = type(graph_def)()
        cut.CopyFrom(graph_def)
    return _fixed_shapes(_inputs_as_placeholders(cut, graph_def, inputs), inputs)


def _fixed_shapes(cut_graph, inputs):
    """Each input the user gave a shape gets it (dims given as ? keep the graph's); a shape that
    disagrees with the graph (rank, or a fixed dim) is an InputError naming both."""
    by_name = {n.name: n for n in cut_graph.node}
    for ref in inputs:
        if ref.shape is None:
            continue
        proto = by_name[ref.node].attr["shape"].shape
        have = None if proto.unknown_rank else [d.size if d.size >= 0 else None for d in proto.dim]
        want = list(ref.shape)
        if have is not None:
            bad = len(have) != len(want) or any(
                h is not None and w is not None and h != w for h, w in zip(have, want, strict=True))
            if bad:
                raise InputError(f"input '{ref.name}': --inputs gives {_spell(want)} but the graph "
                                 f"has {_spell(have)}; give a shape of the same rank whose fixed "
                                 "dims agree")
            want = [h if w is None else w for h, w in zip(have, want, strict=True)]
        proto.unknown_rank = False
        del proto.dim[:]
        for dim in want:
            proto.dim.add().size = -1 if dim is None else dim
    return cut_graph


def _spell(dims) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _inputs_as_placeholders(cut_graph, original, inputs):
    from graphfreeze.graph.ops import PLACEHOLDER_OPS

    by_name = {n.name: n for n in cut_graph.node}
    for ref in inputs:  # what it read was cut away (stop_at): fed, a Placeholder (same attrs)
        node = by_name[ref.node]
        if node.op in PLACEHOLDER_OPS:
            node.op = "Placeholder" if node.op == "PlaceholderWithDefault" else node.op
            del node.input[:]
    cut = [t for t in inputs if by_name[t.node].op not in PLACEHOLDER_OPS]
    if not cut:
        return cut_graph
    from graphfreeze.graph.session import import_graph

    # the cut tensors' dtypes and shapes, from what computes them
    graph = import_graph(extract(original, [t.node for t in cut]))
    for ref in cut:
        if ref.index != 0:
            raise InputError(f"input '{ref.name}': only output 0 of a node can become an input; "
                             f"cut the graph at a node with one output")
        tensor = graph.get_tensor_by_name(ref.name)
        node = by_name[ref.node]
        node.Clear()
        node.name, node.op = ref.node, "Placeholder"
        node.attr["dtype"].type = tensor.dtype.base_dtype.as_datatype_enum
        node.attr["shape"].shape.CopyFrom(tensor.shape.as_proto())
    return cut_graph
