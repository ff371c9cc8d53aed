"""The features a model reads from its data, by key: those a `tf.Example` parse op declares
(`parse_spec`: each key, kind, dtype, shape and the outputs giving it, read from the node, its
op's definition and its constant inputs) and those a `tf.data` iterator hands an Estimator
(`iterator_keys`: its `features` dict, flattened in key order, keys recovered from the feature
columns' scopes that read each output)."""

from __future__ import annotations

import re
from dataclasses import dataclass

PARSE_OPS = ("ParseExample", "ParseExampleV2", "ParseSingleExample", "ParseSequenceExample",
             "ParseSequenceExampleV2", "ParseSingleSequenceExample")
EXAMPLE_OPS = PARSE_OPS[:3]  # a tf.Example each (not a SequenceExample)
# a feature's outputs: (output arg of its op, less the group prefix; the part's name suffix)
_PARTS = {"sparse": (("sparse_values", ""), ("sparse_indices", "/indices"),
                     ("sparse_shapes", "/dense_shape")),
          "dense": (("dense_values", ""), ("dense_lengths", "/lengths")),
          "ragged": (("ragged_values", ""), ("ragged_row_splits", "/row_splits"),
                     ("ragged_outer_splits", "/outer_splits"),
                     ("ragged_inner_splits", "/inner_splits"))}
PART_SUFFIXES = tuple(dict.fromkeys(s for parts in _PARTS.values() for _, s in parts if s))
_GROUPS = ("", "context_", "feature_list_")  # a tf.Example's; a SequenceExample's two


@dataclass(frozen=True)
class Feature:
    key: str
    kind: str  # "dense", "sparse" or "ragged"
    dtype: int  # DataType of its values
    shape: tuple[int, ...]  # each example's shape (-1: any length) of a dense feature
    parts: tuple[tuple[str, int], ...]  # (name, output index): `KEY` its values, `KEY/indices`..
    sequence: bool = False  # a SequenceExample's feature list


def parse_spec(by_name: dict, node) -> list[Feature] | None:
    """The features parse op `node` parses, its outputs in order; None when a key is not a
    constant (or the op is not one of PARSE_OPS)."""
    from graphfreeze.proto.ops import op_def

    found = op_def(node.op) if node.op in PARSE_OPS else None
    if found is None:
        return None
    outs = _arg_ranges(node, found, found.output_arg)
    ins = _arg_ranges(node, found, found.input_arg)
    types = output_types(node)
    features = []
    for group in _GROUPS:
        for kind, parts in _PARTS.items():
            keys = _keys(by_name, node, ins, f"{group}{kind}_keys")
            if keys is None or any(len(outs[f"{group}{arg}"]) != len(keys)
                                   for arg, _ in parts if f"{group}{arg}" in outs):
                return None
            shapes = node.attr[f"{group}dense_shapes"].list.shape if kind == "dense" and \
                f"{group}dense_shapes" in node.attr else []
            for i, key in enumerate(keys):
                where = [(f"{key}{suffix}", outs[f"{group}{arg}"][i]) for arg, suffix in parts
                         if f"{group}{arg}" in outs]
                shape = tuple(d.size for d in shapes[i].dim) if i < len(shapes) else ()
                features.append(Feature(key, kind, types[where[0][1]], shape, tuple(where),
                                        group == "feature_list_"))
    return features


def _arg_ranges(node, found, args) -> dict[str, list[int]]:
    """{arg name: the input or output indices it spans} of `node` (its op def `found`)."""
    from graphfreeze.proto.ops import attr_value

    ranges, at = {}, 0
    for arg in args:
        count = 1
        if arg.number_attr:
            count = attr_value(node, found, arg.number_attr).i
        elif arg.type_list_attr:
            count = len(attr_value(node, found, arg.type_list_attr).list.type)
        ranges[arg.name] = list(range(at, at + count))
        at += count
    return ranges


def output_types(node) -> list[int]:
    """The DataType of each output of `node`, from its op's definition and its attrs (a ref
    output as its value's type)."""
    from graphfreeze.proto.ops import arg_types, op_def

    found = op_def(node.op)
    return [t % 100 for t in arg_types(found.output_arg, node, found)]


def _keys(by_name: dict, node, ins: dict, arg: str) -> list[str] | None:
    """The keys `arg` names: its constant inputs (one vector, or a scalar each) or its attr; []
    when the op has no such keys; None when one is not a constant."""
    from graphfreeze.graph.consts import const_value

    if arg not in ins:
        return [k.decode() for k in node.attr[arg].list.s] if arg in node.attr else []
    values = [const_value(by_name, node.input[i]) for i in ins[arg]]
    if any(v is None for v in values):
        return None
    return [k.decode() if isinstance(k, bytes) else str(k) for v in values
            for k in v.reshape(-1).tolist()]


def parse_refusal_hint(graph_def, message: str | None) -> str:
    """What to add to a target's refusal `message` that names a parse op `graph_def` runs: the
    features it parses, by key, as the model's inputs instead (what users do by hand)."""
    from graphfreeze.graph.graphdefs import nodes_by_name

    if graph_def is None or not message:
        return ""
    by_name = nodes_by_name(graph_def)
    keys = []
    for node in graph_def.node:
        if node.op in PARSE_OPS and re.search(rf"\b{node.op}\b", message):
            spec = parse_spec(by_name, node) or []
            keys += [f.key for f in spec if f.key not in keys]
    if not keys:
        return ""
    return (f"; or, without the tf.Example parsing, take the features it parses as the "
            f"model's inputs: --inputs {','.join(sorted(keys))}")


# scopes feature columns build their ops in (`.../input_layer/age/...`), and what a column's
# name adds to its keys' (`age_bucketized`, `color_embedding`, `a_X_b`, `ids_weighted_by_w`)
_COLUMN_SCOPE = re.compile(r"(input_layer|linear_model|dense_features|sequence_input_layer)"
                           r"(_\d+)?$")
_COLUMN_SUFFIX = re.compile(r"_(bucketized|embedding|shared_embedding|indicator)$")


def iterator_keys(graph_def, node: str) -> dict[int, str]:
    """{output index: feature key} of iterator `node`'s outputs that feature columns read, when
    every such output's key is told apart and the keys are in their dict's (sorted) order; else
    {} (the outputs keep their `NODE/output_K` names)."""
    from graphfreeze.graph.graphdefs import split_tensor

    stripped: dict[int, set[str]] = {}  # (`age_1`: the scope's uniquifier dropped)
    raw: dict[int, set[str]] = {}
    for user in graph_def.node:
        for tensor in user.input:
            source, index = split_tensor(tensor)
            if source != node or tensor.startswith("^") or not _column_keys(user.name, False):
                continue
            for sets, strip in ((stripped, True), (raw, False)):
                keys = _column_keys(user.name, strip)
                sets[index] = sets.get(index, keys) & keys
    candidates = {i: stripped[i] or raw[i] for i in stripped}
    found: dict[int, str] = {}
    while True:  # a key told apart is no other output's
        sure = {i: next(iter(k)) for i, k in candidates.items() if len(k) == 1 and i not in found}
        if not sure:
            break
        found.update(sure)
        taken = set(found.values())
        candidates = {i: k if i in found else k - taken for i, k in candidates.items()}
    keys = [found.get(i) for i in sorted(candidates)]
    if None in keys or keys != sorted(keys) or len(set(keys)) != len(keys):
        return {}
    return found


def _column_keys(name: str, strip: bool) -> set[str]:
    """The feature keys the column whose scope holds op `name` may read (`age_bucketized_1`:
    age, with the scope's `_1` uniquifier `strip`ped; `a_X_color_embedding`: a, color); empty
    outside a column's scope."""
    parts = name.split("/")
    at = max((i for i, p in enumerate(parts[:-2]) if _COLUMN_SCOPE.match(p)), default=None)
    if at is None:
        return set()
    column = re.sub(r"_\d+$", "", parts[at + 1]) if strip else parts[at + 1]
    keys = set()
    for key in re.split(r"_X_|_weighted_by_", column):
        while _COLUMN_SUFFIX.search(key):
            key = _COLUMN_SUFFIX.sub("", key)
        keys.add(key)
    return keys
