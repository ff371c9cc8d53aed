"""What values an input takes, read from the graph it feeds: the keys of the lookup table it is
looked up in, the rows of the embedding its token ids index, whether the model splits it into
words or decodes it as UTF-8, whether it is the row splits of a ragged input, the features of
the serialized tf.Examples a parse op reads from it. Seeded data is drawn from these
(tensors.sample_inputs) and the user's data is checked against them."""

from __future__ import annotations

from dataclasses import dataclass

PASS_OPS = {"Identity", "Cast", "Reshape", "ExpandDims", "Squeeze", "StringLower", "StringUpper",
            "StaticRegexReplace", "RegexReplace", "StringStrip", "StringSplitV2", "StringSplit",
            "RaggedTensorToTensor", "AddV2", "Add", "StridedSlice", "ConcatV2", "Pack",
            "GatherV2"}  # not clipping (Minimum, Maximum, Select): any id is valid there
GATHER_OPS = {"GatherV2": 1, "Gather": 1, "ResourceGather": 1}
FIND_OPS = {"LookupTableFindV2", "LookupTableFind"}
UTF8_OPS = {"UnicodeDecode", "UnicodeDecodeWithOffsets", "UnicodeTranscode"}
DEPTH = 10


@dataclass(frozen=True)
class Domain:
    keys: tuple = ()  # the lookup table's keys (bytes or ints)
    vocabulary: int | None = None  # rows of the embedding the ids index
    words: bool = False  # split into words before the lookup
    utf8: str | None = None  # the node decoding it as UTF-8
    splits_of: str | None = None  # this input is the row splits of that ragged input
    level: int = 1  # ... of its `level`-th ragged dimension (1: the rows)
    # serialized tf.Examples a parse op reads: ((graph/features.Feature, Domain of its values),)
    examples: tuple = ()
    sparse_of: str | None = None  # this input is the `sparse_part` of that sparse feature's
    sparse_part: str | None = None  # values: "indices" or "dense_shape"


def _const(by_name: dict, name: str):
    from graphfreeze.graph.consts import node_value
    from graphfreeze.graph.graphdefs import node_of

    node = by_name.get(node_of(name))
    while node is not None and node.op == "Identity":
        node = by_name.get(node_of(node.input[0]))
    return None if node is None or node.op != "Const" else node_value(node)


def _table_keys(by_name: dict, table: str) -> tuple:
    """The keys a frozen table is filled with (graph/tables.py's LookupTableImportV2)."""
    from graphfreeze.graph.graphdefs import node_of

    for node in by_name.values():
        if node.op in ("LookupTableImportV2", "InitializeTableV2") and \
                node_of(node.input[0]) == table:
            keys = _const(by_name, node.input[1])
            if keys is not None:
                return tuple(keys.reshape(-1).tolist())
    return ()


def _params_rows(by_name: dict, name: str) -> int | None:
    from graphfreeze.graph.graphdefs import node_of

    node = by_name.get(node_of(name))
    while node is not None and node.op in ("Identity", "ReadVariableOp"):
        node = by_name.get(node_of(node.input[0]))
    if node is None or node.op != "Const":
        return None
    dims = node.attr["value"].tensor.tensor_shape.dim
    return int(dims[0].size) if dims else None


def domain(graph_def, by_name: dict, users: dict, node: str, index: int | None = None) -> Domain:
    """Walk from input `node` (its output `index` alone, if given) through ops that carry its
    values (casts, reshapes, string normalization, splitting) to the first table lookup,
    embedding gather or tf.Example parse op it reaches."""
    from graphfreeze.graph.features import EXAMPLE_OPS
    from graphfreeze.graph.graphdefs import split_tensor

    keys, vocabulary, words, utf8, examples = (), None, False, None, ()
    frontier, seen = [node], {node}
    for _ in range(DEPTH):
        following = []
        for name in frontier:
            at = index if name == node else None
            for user in users.get(name, ()):
                op = by_name[user]
                ports = [i for i, inp in enumerate(op.input) if not inp.startswith("^") and
                         split_tensor(inp)[0] == name and at in (None, split_tensor(inp)[1])]
                if op.op in EXAMPLE_OPS and 0 in ports and not examples:
                    examples = _examples(graph_def, by_name, users, op)
                    continue
                if op.op in UTF8_OPS or (op.op in ("StringLower", "StringUpper") and
                                         op.attr["encoding"].s.lower() == b"utf-8"):
                    utf8 = utf8 or user
                if op.op in FIND_OPS and 1 in ports and not keys:
                    keys = _table_keys(by_name, split_tensor(op.input[0])[0])
                    continue
                if op.op in GATHER_OPS and GATHER_OPS[op.op] in ports and vocabulary is None:
                    vocabulary = _params_rows(by_name, op.input[0])
                    continue
                if op.op in ("StringSplitV2", "StringSplit"):
                    words = True
                if op.op in PASS_OPS and user not in seen:
                    seen.add(user)
                    following.append(user)
        frontier = following
    return Domain(keys, vocabulary, words, utf8, examples=examples)


def _examples(graph_def, by_name: dict, users: dict, parser) -> tuple:
    """(feature, the Domain of its values) of each feature tf.Example parse op `parser`
    declares (graph/features.parse_spec); () when a key is not a constant."""
    from graphfreeze.graph.features import parse_spec

    return tuple((f, domain(graph_def, by_name, users, parser.name, f.parts[0][1]))
                 for f in parse_spec(by_name, parser) or ())


def _ragged_splits(by_name: dict, users: dict, name: str, nodes: set) -> tuple | None:
    """(`X`, k) when input `X_k` is the row splits of level k of a ragged input `X` (how a
    signature flattens a tf.RaggedTensorSpec: values `X`, splits `X_1` outermost, `X_2` ...):
    it feeds ragged ops within a few hops."""
    base, _, index = name.rpartition("_")
    if not index.isdigit() or int(index) < 1 or base not in nodes or \
            any(f"{base}_{k}" not in nodes for k in range(1, int(index))):
        return None
    frontier = [name]
    for _ in range(4):
        frontier = [u for n in frontier for u in users.get(n, ())]
        if any("Ragged" in u or by_name[u].op.startswith("Ragged") for u in frontier):
            return base, int(index)
    return None


def _sparse_part(node: str, dtype: str, nodes: set) -> tuple[str, str] | None:
    """(`KEY`, part) when input `KEY/indices` or `KEY/dense_shape` is a part of the parsed
    sparse feature `KEY` (graph/inputs.features_as_nodes' names), all three inputs."""
    base, _, part = node.rpartition("/")
    if part in ("indices", "dense_shape") and dtype == "int64" and base in nodes and \
            {f"{base}/indices", f"{base}/dense_shape"} <= nodes:
        return base, part
    return None


def domains(graph_def, infos) -> dict:
    """{input tensor name: Domain} for inputs whose graph says something about their values."""
    from graphfreeze.graph.graphdefs import consumers, nodes_by_name, split_tensor
    from graphfreeze.graph.index_ranges import input_ranges

    by_name, users = nodes_by_name(graph_def), consumers(graph_def)
    nodes = {split_tensor(i.name)[0] for i in infos}
    # integer ids whose table is reached through Keras' `take` (SelectV2 wrapping negative ids)
    # or that are only compared (masks: 0 and 1): index_ranges' walk
    ranges = input_ranges(graph_def, [split_tensor(i.name)[0] for i in infos
                                      if i.dtype in ("int32", "int64") and i.name])
    found = {}
    for info in infos:
        node = split_tensor(info.name)[0]
        sparse = _sparse_part(node, info.dtype, nodes)
        if sparse:
            found[info.name] = Domain(sparse_of=f"{sparse[0]}:0", sparse_part=sparse[1])
            continue
        splits_of = _ragged_splits(by_name, users, node, nodes) \
            if info.dtype in ("int64", "int32") and info.shape and len(info.shape) == 1 else None
        if splits_of:
            found[info.name] = Domain(splits_of=f"{splits_of[0]}:0", level=splits_of[1])
            continue
        if node in by_name:
            seen = domain(graph_def, by_name, users, node)
            if not seen.keys and seen.vocabulary is None and node in ranges:
                seen = Domain(vocabulary=ranges[node][1], words=seen.words, utf8=seen.utf8)
            if seen != Domain():
                found[info.name] = seen
    return found
