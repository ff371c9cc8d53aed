"""Resolve the names users give (`probs`, `probs:0`, `x,y`, a Keras layer `Conv1`) against a
graph, and guess them.

Inputs default to the placeholders the outputs depend on; training flags (a `keep_prob`
PlaceholderWithDefault, the Keras learning phase, `is_training`) are not inputs but get their
inference value.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from graphfreeze.errors import InputError
from graphfreeze.graph.graphdefs import consumers, nodes_by_name, reachable, split_tensor
from graphfreeze.graph.layer_names import layer_members
from graphfreeze.graph.ops import FED_OPS, PLACEHOLDER_OPS

# Last name component -> inference value, for scalar flags that must not become inputs.
FLAG_VALUES = {
    "keep_prob": 1.0, "keep_probability": 1.0, "dropout_keep_prob": 1.0,
    "dropout_rate": 0.0, "dropout": 0.0,
    "is_training": False, "training": False, "is_train": False, "phase_train": False,
    "learning_phase": False, "keras_learning_phase": False,
}

# Nodes that never make a sensible model output.
_TRAINING_PREFIXES = ("save/", "save_", "gradients/", "gradients_", "train/", "Adam", "GradientDescent",
                      "Momentum", "RMSProp", "Adagrad", "report_uninitialized", "init", "Merge/",
                      "summaries", "global_step", "beta1_power", "beta2_power")
_OUTPUT_OPS = {"Softmax", "Sigmoid", "ArgMax", "TopKV2", "LogSoftmax"}
_OUTPUT_WORDS = ("prob", "predict", "output", "logit", "score", "embedding", "classes")
_TRAINING_WORDS = ("gradients", "loss", "accuracy", "summary", "metric", "optimizer")
_NON_OUTPUT_OPS = {
    "NoOp", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "AssignAddVariableOp",
    "AssignSubVariableOp", "SaveV2", "RestoreV2", "MergeSummary", "ScalarSummary",
    "HistogramSummary", "ImageSummary", "Const", "VariableV2", "Variable", "VarHandleOp",
    "VarIsInitializedOp", "IsVariableInitialized", "Assert", "Print", "PrintV2",
    "Placeholder", "PlaceholderWithDefault", "ReadVariableOp", "Identity", "ApplyAdam",
    "ResourceApplyAdam", "ShardedFilename", "StringJoin", "MergeV2Checkpoints", "Pack",
    "Shape", "ShapeN", "Size", "Rank", "SparseSoftmaxCrossEntropyWithLogits",
    "SoftmaxCrossEntropyWithLogits",
}


@dataclass(frozen=True)
class TensorRef:
    """A tensor the user named: node and output index, spelt both ways."""

    node: str
    index: int = 0
    shape: tuple[int | None, ...] | None = None  # a shape the user fixed: x:0[1,224,224,3]

    @property
    def name(self) -> str:
        return f"{self.node}:{self.index}"


def parse_names(text: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """'a, b:0[1,224,224,3]' or ['a', 'b:0'] -> ['a', 'b:0[1,224,224,3]'] (commas inside
    brackets kept; empty entries dropped)."""
    if text is None:
        return []
    items = []
    for part in [text] if isinstance(text, str) else text:
        if part.count("[") != part.count("]"):  # left whole: split_shape says what is wrong
            items.append(part)
            continue
        items += re.findall(r"(?:[^,\[]|\[[^\]]*\])+", part)
    return [i.strip() for i in items if i.strip()]


def split_shape(raw: str, role: str) -> tuple[str, tuple[int | None, ...] | None]:
    """'x:0[1,224,224,3]' -> ('x:0', (1, 224, 224, 3)); '-1' or '?' is an unknown dim."""
    match = re.fullmatch(r"(.*?)\[([^\]]*)\]", raw.strip())
    if not match:
        if "[" in raw or "]" in raw:
            raise InputError(f"{role} '{raw}': a shape is written in brackets after the name, "
                             "e.g. x:0[1,224,224,3]")
        return raw.strip(), None
    dims = []
    for dim in (d.strip() for d in match.group(2).split(",") if d.strip()):
        if dim in ("?", "-1", "None"):
            dims.append(None)
        elif dim.isdigit() and int(dim) > 0:
            dims.append(int(dim))
        else:
            raise InputError(f"{role} '{raw}': shape dims must be positive numbers (or ? for unknown), "
                             "e.g. x:0[1,224,224,3]")
    return match.group(1), tuple(dims)


def suggest(name: str, candidates: list[str], n: int = 3) -> str:
    close = difflib.get_close_matches(name, candidates, n=n, cutoff=0.6)
    if not close:
        tail = name.rsplit("/", 1)[-1].lower()
        close = sorted(c for c in candidates if tail and tail in c.lower())[:n]
    return ", ".join(f"'{c}'" for c in close)


def resolve(graph_def, names: list[str], role: str, where: str,
            keras: str | None = None) -> list[TensorRef]:
    """Map user names to TensorRefs (a Keras layer's name, as `keras` named its ops (layer_names),
    to its output); an unknown name raises an InputError with suggestions."""
    by_name = nodes_by_name(graph_def)
    refs, given = [], {}
    for raw in names:
        name, shape = split_shape(raw, role)
        if name.startswith("^"):
            raise InputError(f"{role} '{name}': a control input's spelling; give the tensor, "
                             f"'{name[1:]}'")
        node, index = split_tensor(name)
        if node not in by_name and ":" not in name:
            node, index = _layer_output(graph_def, by_name, node, role, where, keras) or \
                (node, index)
        if node not in by_name:
            hint = suggest(node, list(by_name))
            fix = f"did you mean {hint}?" if hint else "run `freeze inspect` to list the nodes"
            raise InputError(f"{role} '{name}' not in graph {where}; {fix}")
        if shape is not None and role != "input":
            raise InputError(f"{role} '{raw}': only --inputs take a shape; drop [..]")
        _check_index(graph_def, by_name[node], index, role, name, where)
        if (node, index) in given:  # one tensor named twice (`probs,probs:0`, or a signature's
            continue  # two keys): once
        given[node, index] = name
        refs.append(TensorRef(node, index, shape))
    return refs


def check_fed(graph_def, needed: set[str], given, flags: dict, outputs: str) -> None:
    """The --inputs `given` are what the `outputs` need (`needed`): each one needed, and every
    placeholder needed given or a flag (else it would stay a placeholder nothing feeds). None
    given: no check (the inputs are found)."""
    for ref in given:
        if ref.node not in needed:
            raise InputError(f"input '{ref.name}' is not needed by {outputs}; drop it from "
                             "--inputs")
    if not given:
        return
    fed = {ref.node for ref in given} | set(flags)
    missed = sorted(n.name for n in graph_def.node
                    if n.op in FED_OPS and n.name in needed and n.name not in fed)
    if missed:
        raise InputError(f"{outputs} need placeholder '{missed[0]}', which --inputs does not "
                         "name; add it to --inputs (or leave --inputs out)")


def _layer_output(graph_def, by_name: dict, layer: str, role: str, where: str,
                  keras: str | None) -> tuple[str, int] | None:
    """The tensor Keras layer `layer` outputs (the one tensor of its ops, computed from the
    inputs, that ops outside it read, or that nothing reads), or None when no scope in the
    graph is that layer's (layer_names). A TF1 graph's optimizer and saver do not count."""
    users = consumers(graph_def)
    fed = _fed(graph_def, users)
    members = {n for n in layer_members(by_name, layer, keras)
               if n in fed and not _training_only(n)}
    found = []
    for node in graph_def.node:
        if node.name in members or _training_only(node.name):
            continue
        for source in (split_tensor(i) for i in node.input if not i.startswith("^")):
            if source[0] in members and source not in found:
                found.append(source)
    found += [(n, 0) for n in sorted(members) if by_name[n].op not in _NON_OUTPUT_OPS and
              not any(not _training_only(u) for u in users.get(n, ()))]
    if len(found) > 1:
        tensors = ", ".join(f"{n}:{i}" for n, i in found[:4]) + (", ..." if len(found) > 4 else "")
        raise InputError(f"{role} '{layer}': layer '{layer}' in {where} gives {len(found)} "
                         f"tensors ({tensors}); name one of them")
    return found[0] if found else None


def _fed(graph_def, users: dict[str, list[str]]) -> set[str]:
    """Every node computed from a placeholder (forward from them)."""
    fed = {n.name for n in graph_def.node if n.op in PLACEHOLDER_OPS}
    todo = list(fed)
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in fed:
                fed.add(user)
                todo.append(user)
    return fed


def _check_index(graph_def, node, index: int, role: str, name: str, where: str) -> None:
    """An InputError if `node` has no output `index` (probs:1 of a Softmax, a NoOp's :0)."""
    from graphfreeze.proto.ops import output_count

    count = output_count(graph_def, node)
    if count is None or index < count:
        return
    if count == 0:
        raise InputError(f"{role} '{name}': node '{node.name}' ({node.op}) in {where} has no "
                         f"outputs, so it cannot be an {role}; name a node that computes a "
                         "tensor")
    have = ", ".join(f"{node.name}:{i}" for i in range(min(count, 4))) + \
        (", ..." if count > 4 else "")
    raise InputError(f"{role} '{name}': node '{node.name}' ({node.op}) in {where} has "
                     f"{count} output{'s' if count != 1 else ''} ({have}); use one of those")


def flag_nodes(graph_def, within: set[str], inputs: set[str]) -> dict[str, object]:
    """Scalar training flags among `within`, with the inference value each gets. A placeholder
    of unknown rank named as a flag (TF1 tutorials' `tf.placeholder(tf.float32,
    name="keep_prob")`) is taken as a scalar, unless the user gives it as an input."""
    flags: dict[str, object] = {}
    for node in graph_def.node:
        if node.name not in within or node.name in inputs or node.op not in PLACEHOLDER_OPS:
            continue
        shape = node.attr["shape"].shape
        scalar = not shape.unknown_rank and len(shape.dim) == 0
        key = node.name.rsplit("/", 1)[-1]
        if (scalar or shape.unknown_rank) and key in FLAG_VALUES:
            flags[node.name] = FLAG_VALUES[key]
        elif scalar and node.op == "PlaceholderWithDefault":
            flags[node.name] = None  # keep its own default
    return flags


def default_inputs(graph_def, outputs: list[TensorRef], flags: set[str]) -> list[TensorRef]:
    """The placeholders the outputs depend on, minus flags, in graph order."""
    needed = reachable(graph_def, [o.node for o in outputs])
    return [TensorRef(n.name) for n in graph_def.node
            if n.name in needed and n.op in PLACEHOLDER_OPS and n.name not in flags]


def likely_outputs(graph_def, limit: int = 5) -> list[str]:
    """Nodes that look like inference results, best first (for a missing --outputs). A node the
    user named (`probs = tf.identity(softmax, name="probs")`) comes before the op it wraps, and
    user-given names before generated ones (`predictions/Softmax`, `Mean`)."""
    users = consumers(graph_def)
    fed = _fed(graph_def, users)
    by_name = nodes_by_name(graph_def)
    ranks: dict[str, int] = {}
    wraps: dict[str, str] = {}  # (each Identity chain walked once)
    training = {name: _training_only(name) for name in fed}  # users are fed too
    for node in graph_def.node:
        if node.name not in fed or training[node.name] or node.op.endswith("Summary"):
            continue
        inference_users = [u for u in users.get(node.name, ()) if not training[u]]
        word = any(w in node.name.rsplit("/", 1)[-1].lower() for w in _OUTPUT_WORDS)
        if node.op in _NAMING_OPS:
            if _generated(node) or (inference_users and not word) or not node.input:
                continue
            wrapped = _unwrap(by_name, node, wraps)
            rank = ranks.get(wrapped, _rank(by_name.get(wrapped), word, inference_users))
        elif node.op in _NON_OUTPUT_OPS:
            continue
        else:
            rank = _rank(node, word, inference_users)
        if rank is not None:
            ranks[node.name] = rank
    order = {n.name: i for i, n in enumerate(graph_def.node)}

    def key(name: str) -> tuple:
        node = by_name[name]
        named = node.op in _NAMING_OPS  # the user's name for what it wraps: ahead of it
        return (ranks[name], not named, _generated(node), order[name])

    return sorted(ranks, key=key)[:limit]


_NAMING_OPS = {"Identity", "Snapshot"}


def _rank(node, word: bool, inference_users) -> int | None:
    if node is None:
        return None
    return (0 if node.op in _OUTPUT_OPS and word else
            1 if node.op in ("Softmax", "Sigmoid") else
            2 if word else
            3 if node.op in _OUTPUT_OPS else
            4 if not inference_users else None)


def _unwrap(by_name: dict, node, memo: dict) -> str:
    """The node an Identity chain wraps (`memo`: the answer of each link walked before)."""
    links: dict[str, None] = {}
    while node is not None and node.op in _NAMING_OPS and node.input and node.name not in links:
        if node.name in memo:
            found = memo[node.name]
            break
        links[node.name] = None
        found = split_tensor(node.input[0])[0]
        node = by_name.get(found)
        if node is None or node.op not in _NAMING_OPS:
            break
    else:
        found = node.name if node is not None else ""
    memo.update(dict.fromkeys(links, found))
    return found


def _generated(node) -> bool:
    """Whether TensorFlow named the node after its op (`Identity_2`, `dense/Softmax`, `Mean`)."""
    last = node.name.rsplit("/", 1)[-1]
    return re.fullmatch(rf"{re.escape(node.op)}(_\d+)?", last) is not None or \
        re.fullmatch(r"[A-Z]\w*(_\d+)?", last) is not None


def _training_only(name: str) -> bool:
    lowered = name.lower()
    return name.startswith(_TRAINING_PREFIXES) or any(w in lowered for w in _TRAINING_WORDS)
