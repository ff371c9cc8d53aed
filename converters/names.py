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
from graphfreeze.graph.likely import (
    NON_OUTPUT_OPS,
    fed_nodes,
    likely_outputs,  # noqa: F401 -- (names.likely_outputs)
    output_ranks,
    training_only,
)
from graphfreeze.graph.ops import FED_OPS, ITERATOR_GET_OPS, PLACEHOLDER_OPS

# Last name component -> inference value, for scalar flags that must not become inputs.
FLAG_VALUES = {
    "keep_prob": 1.0, "keep_probability": 1.0, "dropout_keep_prob": 1.0,
    "dropout_rate": 0.0, "dropout": 0.0,
    "is_training": False, "training": False, "is_train": False, "phase_train": False,
    "learning_phase": False, "keras_learning_phase": False,
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


def suggest(name: str, graph_def, n: int = 3) -> str:
    """Up to `n` nodes the user may have meant by `name`: spelled like it, of the op type it
    names (`softmax`: the Softmax nodes) or holding it; what inference computes first (on the
    way from the inputs to the likely outputs), the training scopes' (gradients/, the
    optimizer's, the loss's) last."""
    lowered = name.lower()
    tail = lowered.rsplit("/", 1)[-1]
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(name)
    found = {}
    for node in graph_def.node:
        matcher.set_seq1(node.name)
        close = matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6 and \
            matcher.ratio() >= 0.6
        how = 0 if node.op.lower() == tail else 1 if close else \
            2 if tail and tail in node.name.lower() else None
        if how is not None:
            found[node.name] = (how, -matcher.ratio() if close else 0.0)
    if not found:
        return ""
    path = _inference_path(graph_def)
    tier = {c: 0 if c in path else 2 if any(map(training_only, c.split("/"))) else 1
            for c in found}  # (an optimizer's slots: dense/kernel/Adam)
    best = sorted(found, key=lambda c: (tier[c], *found[c], c))[:n]
    return ", ".join(f"'{c}'" for c in best)


def _inference_path(graph_def) -> set[str]:
    """The nodes inference computes: those from the placeholders up to the nodes that look like
    outputs (likely_outputs' first ranks: an output op or name), or up to any likely output."""
    ranks, _ = output_ranks(graph_def)
    ends = [name for name, rank in ranks.items() if rank < 4] or list(ranks)
    return reachable(graph_def, ends) & fed_nodes(graph_def, consumers(graph_def))


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
            hint = suggest(node, graph_def)
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


def roots(model, wanted: list[str], given: list[str]) -> list[str] | None:
    """The nodes the outputs and inputs name and the tables' initializer: what a run validates
    the part of; None (the whole graph) when no output is named or a name is not a node's
    (a Keras layer's, resolved to its op later)."""
    named = [split_shape(n, role)[0].lstrip("^") for ns, role in
             ((wanted, "output"), (given, "input")) for n in ns]
    nodes = {n.name for n in model.graph_def.node}
    roots = [split_tensor(n)[0] for n in named] + [t for t in [model.notes.get("table_init")] if t]
    return roots if wanted and all(r in nodes for r in roots) else None


def check_given(load, outputs, inputs) -> None:
    """An InputError if a name in `outputs` or `inputs` is not the model's (`load()` gives the
    model): said before an output is refused, as its fix comes first. A model that fails to load
    says nothing here (the run says it)."""
    if not (outputs or inputs):
        return
    try:
        model = load()
    except Exception:  # noqa: BLE001 -- said by the run, once the output is dealt with
        return
    for wanted, role in ((outputs, "output"), (inputs, "input")):
        resolve(model.graph_def, list(wanted), role, model.graph_file, model.notes.get("keras"))


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
    fed = fed_nodes(graph_def, users)
    members = {n for n in layer_members(by_name, layer, keras)
               if n in fed and not training_only(n)}
    found = []
    for node in graph_def.node:
        if node.name in members or training_only(node.name):
            continue
        for source in (split_tensor(i) for i in node.input if not i.startswith("^")):
            if source[0] in members and source not in found:
                found.append(source)
    found += [(n, 0) for n in sorted(members) if by_name[n].op not in NON_OUTPUT_OPS and
              not any(not training_only(u) for u in users.get(n, ()))]
    if len(found) > 1:
        tensors = ", ".join(f"{n}:{i}" for n, i in found[:4]) + (", ..." if len(found) > 4 else "")
        raise InputError(f"{role} '{layer}': layer '{layer}' in {where} gives {len(found)} "
                         f"tensors ({tensors}); name one of them")
    return found[0] if found else None


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
    """The placeholders the outputs depend on, minus flags, in graph order; then the features
    a dataset iterator gives them (an Estimator's model_dir), by output: each one's node by its
    key (graph/inputs.features_as_nodes), else the iterator's output (`IteratorGetNext:1`)."""
    needed = reachable(graph_def, [o.node for o in outputs])
    found = [TensorRef(n.name) for n in graph_def.node
             if n.name in needed and n.op in PLACEHOLDER_OPS and n.name not in flags]
    return found + iterator_inputs(graph_def, needed)


def iterator_inputs(graph_def, needed: set[str]) -> list[TensorRef]:
    """The outputs of the dataset iterators in `needed` that other nodes in `needed` read, in
    the iterator's order: each as the Identity that alone reads it (features_as_nodes' node
    named by its feature key), else as the iterator's output (`IteratorGetNext:1`)."""
    by_name = nodes_by_name(graph_def)
    readers: dict[tuple[str, int], list] = {}
    for node in graph_def.node:
        for tensor in node.input if node.name in needed else ():
            source = by_name.get(split_tensor(tensor)[0])
            if not tensor.startswith("^") and source is not None and \
                    source.op in ITERATOR_GET_OPS:
                readers.setdefault(split_tensor(tensor), []).append(node)
    return [TensorRef(users[0].name) if len(users) == 1 and users[0].op == "Identity" else
            TensorRef(*tensor) for tensor, users in sorted(readers.items())]
