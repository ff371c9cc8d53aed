"""Guesses about a graph's nodes: which look like inference results (likely outputs, ranked),
which belong to training (the optimizer's, the loss's, the saver's scopes), which are computed
from the placeholders (or a dataset iterator's features)."""

from __future__ import annotations

import re

from graphfreeze.graph.graphdefs import consumers, nodes_by_name, split_tensor
from graphfreeze.graph.ops import ITERATOR_GET_OPS, PLACEHOLDER_OPS

# Nodes that never make a sensible model output.
_TRAINING_PREFIXES = ("save/", "save_", "gradients/", "gradients_", "train/", "Adam",
                      "GradientDescent", "Momentum", "RMSProp", "Adagrad", "report_uninitialized",
                      "init", "Merge/", "summaries", "global_step", "beta1_power", "beta2_power")
_OUTPUT_OPS = {"Softmax", "Sigmoid", "ArgMax", "TopKV2", "LogSoftmax"}
_OUTPUT_WORDS = ("prob", "predict", "output", "logit", "score", "embedding", "classes")
_TRAINING_WORDS = ("gradients", "loss", "crossentropy", "accuracy", "summary", "metric",
                   "optimizer")
NON_OUTPUT_OPS = {
    "NoOp", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "AssignAddVariableOp",
    "AssignSubVariableOp", "SaveV2", "RestoreV2", "MergeSummary", "ScalarSummary",
    "HistogramSummary", "ImageSummary", "Const", "VariableV2", "Variable", "VarHandleOp",
    "VarIsInitializedOp", "IsVariableInitialized", "Assert", "Print", "PrintV2",
    "Placeholder", "PlaceholderWithDefault", "ReadVariableOp", "Identity", "ApplyAdam",
    "ResourceApplyAdam", "ShardedFilename", "StringJoin", "MergeV2Checkpoints", "Pack",
    "Shape", "ShapeN", "Size", "Rank", "SparseSoftmaxCrossEntropyWithLogits",
    "SoftmaxCrossEntropyWithLogits",
}


def likely_outputs(graph_def, limit: int = 5) -> list[str]:
    """Nodes that look like inference results, best first (for a missing --outputs). A node the
    user named (`probs = tf.identity(softmax, name="probs")`) comes before the op it wraps, and
    user-given names before generated ones (`predictions/Softmax`, `Mean`)."""
    ranks, by_name = output_ranks(graph_def)
    order = {n.name: i for i, n in enumerate(graph_def.node)}

    def key(name: str) -> tuple:
        node = by_name[name]
        named = node.op in _NAMING_OPS  # the user's name for what it wraps: ahead of it
        return (ranks[name], not named, _generated(node), order[name])

    return sorted(ranks, key=key)[:limit]


def output_ranks(graph_def) -> tuple[dict[str, int], dict]:
    """({node: rank} of the nodes that may be outputs (0 best, 4: only that nothing at
    inference reads it), nodes by name)."""
    users = consumers(graph_def)
    fed = fed_nodes(graph_def, users)
    by_name = nodes_by_name(graph_def)
    ranks: dict[str, int] = {}
    wraps: dict[str, str] = {}  # (each Identity chain walked once)
    training = {name: training_only(name) for name in fed}  # users are fed too
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
        elif node.op in NON_OUTPUT_OPS:
            continue
        else:
            rank = _rank(node, word, inference_users)
        if rank is not None:
            ranks[node.name] = rank
    return ranks, by_name


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


def training_only(name: str) -> bool:
    lowered = name.lower()
    return name.startswith(_TRAINING_PREFIXES) or any(w in lowered for w in _TRAINING_WORDS)


def fed_nodes(graph_def, users: dict[str, list[str]]) -> set[str]:
    """Every node computed from a placeholder or a dataset iterator's next element (an
    Estimator's model_dir: its features), forward from them."""
    fed = {n.name for n in graph_def.node if n.op in PLACEHOLDER_OPS or n.op in ITERATOR_GET_OPS}
    todo = list(fed)
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in fed:
                fed.add(user)
                todo.append(user)
    return fed
