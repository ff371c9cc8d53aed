"""The inference subgraph: the original graph cut to what the outputs need, the inputs a user
chose (any tensor) turned into placeholders, with the shapes the user fixed
(`--inputs x:0[1,224,224,3]`). An input that is one output of several (`IteratorGetNext:1`, a
feature `ParseExample` parsed) gets a node of its own first (`split_inputs`), and the features
a parse op reads from serialized `tf.Example`s are nodes named by their keys
(`features_as_nodes`): `--inputs age,color` cuts the parsing away, as users do by hand."""

from __future__ import annotations

from graphfreeze.errors import InputError
from graphfreeze.graph.graphdefs import extract, free_name, rewire, split_tensor, tensor_name

PARSE_OPS = ("ParseExample", "ParseExampleV2")
SPARSE_PARTS = ("indices", "values", "dense_shape")  # a sparse feature's tensors, in that order


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
    """`graph_def` (a copy) with each feature a `ParseExample`/`ParseExampleV2` node parses as an
    Identity named by its key (a sparse feature: `KEY` its values, `KEY/indices`,
    `KEY/dense_shape`), the parse op's readers reading it; `graph_def` itself if it parses none.
    Nothing changes what the graph computes."""
    parsed = [(n, _feature_outputs(graph_def, n)) for n in graph_def.node if n.op in PARSE_OPS]
    parsed = [(n, outs) for n, outs in parsed if outs]
    if not parsed:
        return graph_def
    taken = {n.name for n in graph_def.node}
    mapping, added = {}, []
    for node, outs in parsed:
        for name, index in outs:
            mapping[tensor_name(node.name, index)] = new = free_name(name, taken)
            added.append(_identity(new, tensor_name(node.name, index), node, index))
    out = rewire(graph_def, mapping)
    out.node.extend(added)
    return out


def parsed_features(graph_def) -> list[str]:
    """The feature nodes `features_as_nodes` made (keys, `KEY/indices`, ...), in graph order."""
    parsers = {n.name for n in graph_def.node if n.op in PARSE_OPS}
    return [n.name for n in graph_def.node
            if n.op == "Identity" and n.input and split_tensor(n.input[0])[0] in parsers]


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
    """The `KEY/indices` and `KEY/dense_shape` nodes of each sparse feature `KEY` in `refs`
    that `refs` lacks."""
    from graphfreeze.names import TensorRef

    named = {r.node for r in refs}
    more = []
    for ref in refs:
        node = by_name[ref.node]
        if node.op != "Identity" or not node.input or by_name.get(
                split_tensor(node.input[0])[0]) is None or \
                by_name[split_tensor(node.input[0])[0]].op not in PARSE_OPS:
            continue
        for part in ("indices", "dense_shape"):
            name = f"{ref.node}/{part}"
            if name in by_name and name not in named:
                named.add(name)
                more.append(TensorRef(name))
    return more


def _identity(name: str, tensor: str, node, index: int):
    """An Identity named `name` reading `tensor` (output `index` of `node`, of its type)."""
    from graphfreeze.proto.tf import node_def_pb2

    new = node_def_pb2.NodeDef(name=name, op="Identity", input=[tensor])
    new.attr["T"].type = _output_types(node)[index]
    return new


def _output_types(node) -> list[int]:
    """The DataType of each output of `node`, from its op's definition and its attrs."""
    from graphfreeze.proto.ops import attr_value, op_def

    found = op_def(node.op)
    types = []
    for arg in found.output_arg:
        if arg.type_list_attr:
            types += list(attr_value(node, found, arg.type_list_attr).list.type)
            continue
        one = arg.type or attr_value(node, found, arg.type_attr).type
        types += [one] * (attr_value(node, found, arg.number_attr).i if arg.number_attr else 1)
    return types


def _feature_outputs(graph_def, node) -> list[tuple[str, int]]:
    """(name, output index) of each feature `node` (a parse op) parses, named by its key (read
    from the Consts it takes): dense `KEY`; sparse `KEY/indices`, `KEY`, `KEY/dense_shape`.
    Empty when a key is not a constant."""
    from graphfreeze.graph.consts import const_value
    from graphfreeze.graph.graphdefs import nodes_by_name

    by_name = nodes_by_name(graph_def)
    sparse_n = node.attr["num_sparse"].i if node.op == "ParseExampleV2" else node.attr["Nsparse"].i
    dense_n = len(node.attr["Tdense"].list.type)
    if node.op == "ParseExampleV2":  # serialized, names, sparse_keys, dense_keys, ...
        keys = [const_value(by_name, node.input[i]) for i in (2, 3)]
        if any(k is None for k in keys):
            return []
        sparse, dense = (list(k.reshape(-1)) for k in keys)
    else:  # serialized, names, sparse_keys (each), dense_keys (each), ...
        keys = [const_value(by_name, node.input[2 + i]) for i in range(sparse_n + dense_n)]
        if any(k is None for k in keys):
            return []
        sparse, dense = keys[:sparse_n], keys[sparse_n:]
    text = [k.decode() if isinstance(k, bytes) else str(k) for k in (*sparse, *dense)]
    if len(text) != sparse_n + dense_n:
        return []
    outs = []
    for i, key in enumerate(text[:sparse_n]):
        outs += [(f"{key}/indices", i), (key, sparse_n + i), (f"{key}/dense_shape", 2 * sparse_n + i)]
    outs += [(key, 3 * sparse_n + i) for i, key in enumerate(text[sparse_n:])]
    return outs
