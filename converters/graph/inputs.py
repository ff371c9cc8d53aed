"""The inference subgraph: the original graph cut to what the outputs need, the inputs a user
chose (any tensor) turned into placeholders, with the shapes the user fixed
(`--inputs x:0[1,224,224,3]`). An input that is one output of several (`IteratorGetNext:1`, a
feature `ParseExample` parsed) gets a node of its own first (`split_inputs`), and the features
a parse op reads from serialized `tf.Example`s are nodes named by their keys
(`features_as_nodes`): `--inputs age,color` cuts the parsing away, as users do by hand."""

from __future__ import annotations

from graphfreeze.errors import InputError
from graphfreeze.graph.graphdefs import extract, free_name, rewire, split_tensor, tensor_name


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


def features_as_nodes(graph_def):
    """`graph_def` (a copy) with each feature a parse op parses (`features.parse_spec`: a sparse
    feature `KEY` its values, `KEY/indices`, `KEY/dense_shape`) and each an Estimator's iterator
    hands its feature columns (`features.iterator_keys`) an Identity named by its key, read by
    what read the op; `graph_def` itself if there is none. Nothing changes what the graph
    computes."""
    from graphfreeze.graph.features import PARSE_OPS, iterator_keys, parse_spec
    from graphfreeze.graph.graphdefs import nodes_by_name
    from graphfreeze.graph.ops import ITERATOR_GET_OPS

    if not any(n.op in PARSE_OPS or n.op in ITERATOR_GET_OPS for n in graph_def.node):
        return graph_def
    by_name = nodes_by_name(graph_def)
    parts = []  # (name, node, output index)
    for node in graph_def.node:
        if node.op in PARSE_OPS:
            parts += [(name, node, i) for f in parse_spec(by_name, node) or () for name, i in f.parts]
        elif node.op in ITERATOR_GET_OPS:
            parts += [(key, node, i) for i, key in sorted(iterator_keys(graph_def, node.name).items())]
    if not parts:
        return graph_def
    taken = set(by_name)
    mapping, added = {}, []
    for name, node, index in parts:
        mapping[tensor_name(node.name, index)] = new = free_name(name, taken)
        added.append(_identity(new, tensor_name(node.name, index), node, index))
    out = rewire(graph_def, mapping)
    out.node.extend(added)
    return out


def split_inputs(graph_def, refs):
    """(`graph_def`, `refs`) with each input that is one output of a node of several (an
    iterator's `IteratorGetNext:1`) read through an Identity of its own (`NODE/output_K`),
    which the cut then makes a placeholder; a sparse feature's values bring its indices and
    dense shape along (`features_as_nodes`). Unchanged if no input needs it."""
    from dataclasses import replace

    from graphfreeze.graph.graphdefs import nodes_by_name
    from graphfreeze.proto.ops import op_def, output_count

    by_name = nodes_by_name(graph_def)
    refs = [*refs, *_sparse_parts(by_name, refs)]
    several = [r for r in refs if op_def(by_name[r.node].op) is not None and
               (output_count(graph_def, by_name[r.node]) or 1) > 1]
    if not several:
        return graph_def, refs
    taken = {n.name for n in graph_def.node}
    mapping, added, new_refs = {}, [], {}
    for ref in several:
        tensor = tensor_name(ref.node, ref.index)
        if tensor not in mapping:
            mapping[tensor] = free_name(f"{ref.node}/output_{ref.index}", taken)
            added.append(_identity(mapping[tensor], tensor, by_name[ref.node], ref.index))
        new_refs[ref] = replace(ref, node=mapping[tensor], index=0)
    out = rewire(graph_def, mapping)
    out.node.extend(added)
    return out, [new_refs.get(r, r) for r in refs]


def _sparse_parts(by_name: dict, refs) -> list:
    """The other parts (`KEY/indices`, `KEY/dense_shape`, ...: features_as_nodes') of each
    parsed feature `KEY` in `refs` that `refs` lacks."""
    from graphfreeze.graph.features import PARSE_OPS, PART_SUFFIXES
    from graphfreeze.names import TensorRef

    def parser(name: str) -> str | None:
        node = by_name.get(name)
        if node is None or node.op != "Identity" or not node.input:
            return None
        source = split_tensor(node.input[0])[0]
        return source if source in by_name and by_name[source].op in PARSE_OPS else None

    named = {r.node for r in refs}
    more = []
    for ref in refs:
        of = parser(ref.node)
        if of is None:
            continue
        for suffix in PART_SUFFIXES:
            name = ref.node + suffix
            if name not in named and parser(name) == of:
                named.add(name)
                more.append(TensorRef(name))
    return more


def _identity(name: str, tensor: str, node, index: int):
    """An Identity named `name` reading `tensor` (output `index` of `node`, of its type)."""
    from graphfreeze.graph.features import output_types
    from graphfreeze.proto.tf import node_def_pb2

    new = node_def_pb2.NodeDef(name=name, op="Identity", input=[tensor])
    new.attr["T"].type = output_types(node)[index]
    return new
