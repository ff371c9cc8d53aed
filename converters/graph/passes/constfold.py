"""Constant folding: evaluate once what depends only on constants, keep the frontier as Consts.

Sizes are checked before anything runs: every candidate's outputs get their static shapes from
TensorFlow's shape inference, and a node whose result is unknown in size, over MAX_FOLD_BYTES,
grows its inputs past MAX_GROWTH_BYTES, or would take the run past MAX_FOLD_TOTAL stays an op
(a `Fill` of 4 TiB is never materialised).
"""

from __future__ import annotations

from graphfreeze.graph.consts import HELD, make_const
from graphfreeze.graph.fake_quant import FAKE_QUANT_OPS
from graphfreeze.graph.graphdefs import (
    GraphDef,
    extract,
    is_control,
    node_of,
    replace_nodes,
    rewire,
    split_tensor,
    tensor_name,
    topo_order,
    with_nodes,
)
from graphfreeze.graph.session import lean_config
from graphfreeze.graph.weights import attach

_NEVER_FOLD = {
    "Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "Switch", "RefSwitch", "Merge",
    "RefMerge", "Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration",
    "LoopCond", "ControlTrigger", "NoOp", "If", "StatelessIf", "While", "StatelessWhile", "Case",
    "StatelessCase", "PartitionedCall", "StatefulPartitionedCall", "Const",
} | set(FAKE_QUANT_OPS)  # a QAT weight's stays: converters read its learned range from it
MAX_GROWTH_BYTES = 16 << 20  # don't materialise a big tensor out of small inputs (Fill, Tile...)
MAX_FOLD_BYTES = 1 << 30  # no single folded result larger than this
MAX_FOLD_TOTAL = 2 << 30  # all results one folding computes together


def _foldable_op(op: str) -> bool:
    """Stateless ops TensorFlow registers, never one that touches the host (ReadFile, ...:
    not even with --unsafe, so no host data is baked into an artifact)."""
    from graphfreeze.graph.checks.safety import host_ops
    from graphfreeze.proto.ops import op_def

    if op in _NEVER_FOLD or op in host_ops():
        return False
    found = op_def(op)
    return found is not None and not found.is_stateful


def fold_constants(graph_def, keep: list[str], owned: bool = False) -> GraphDef:
    """Replace every non-Const node computable from Consts alone by its value (sizes allowing).

    `keep` are output node names: they survive (as Consts if folded) and define what is kept.
    `owned=True`: edit `graph_def` in place.
    """
    order = topo_order(graph_def)
    # A Const with control inputs may sit in a cond branch (its frame): it is not a free value.
    const = {n.name for n in graph_def.node
             if n.op == "Const" and not any(is_control(i) for i in n.input)}
    candidates = _computable(order, const, lambda node: _foldable_op(node.op))
    if not candidates:
        return graph_def
    graph = _import(graph_def, candidates, const)
    sizes = _sizes(graph, candidates | {node_of(i) for n in order if n.name in candidates
                                        for i in n.input if not is_control(i)})
    budget = [MAX_FOLD_TOTAL]
    foldable = _computable(order, const, lambda node: _fits(node, sizes, budget))
    wanted: set[tuple[str, int]] = {(k, 0) for k in keep if k in foldable}
    for node in graph_def.node:
        if node.name in foldable:
            continue
        for inp in node.input:
            src, index = split_tensor(inp)
            if src in foldable and index >= 0:
                wanted.add((src, index))
    if not wanted:
        return extract(graph_def, keep, owned=owned) if foldable else graph_def
    values = _run(graph, sorted(wanted))
    new_nodes, mapping = [], {}
    for (name, index), value in zip(sorted(wanted), values, strict=True):
        new_name = name if index == 0 else f"{name}/output_{index}"
        new_nodes.append(make_const(new_name, value))
        if index != 0:
            mapping[tensor_name(name, index)] = new_name
    graph = rewire(replace_nodes(graph_def, new_nodes, owned=owned), mapping, owned=True)
    return extract(graph, keep, owned=True)


def _computable(order, const: set[str], allowed) -> set[str]:
    """Nodes (in topological `order`) `allowed` whose data and control inputs are all Consts or
    such nodes themselves."""
    done: set[str] = set()
    for node in order:
        if node.name in const or not node.input or \
                any(i.startswith("^") and i[1:] not in const and i[1:] not in done
                    for i in node.input):
            continue
        data = [split_tensor(i)[0] for i in node.input if not is_control(i)]
        if data and all(d in const or d in done for d in data) and allowed(node):
            done.add(node.name)
    return done


def _fits(node, sizes: dict, budget: list[int]) -> bool:
    """Whether `node`'s result is known, small enough and within the run's budget (spent here)."""
    if not _foldable_op(node.op):
        return False
    size = sizes.get(node.name)
    if size is None or size > MAX_FOLD_BYTES or size > budget[0]:
        return False
    inputs = sum(sizes.get(split_tensor(i)[0]) or 0 for i in node.input if not is_control(i))
    if size > MAX_GROWTH_BYTES and size > 2 * inputs:
        return False
    budget[0] -= size
    return True


def _import(graph_def, names: set[str], const: set[str]):
    """A tf.Graph of the candidates and the Consts they read, control edges dropped (values
    never depend on them); importing runs shape inference, evaluating nothing big."""
    import tensorflow as tf

    inputs = {split_tensor(i)[0] for n in graph_def.node if n.name in names for i in n.input}
    sub = with_nodes(graph_def, (n for n in graph_def.node
                                 if n.name in names or (n.name in inputs and n.name in const)))
    for node in sub.node:
        kept = [i for i in node.input if not is_control(i)]
        del node.input[:]
        node.input.extend(kept)
    if HELD.get() is not None:
        attach(sub, HELD.get())  # TensorFlow computes with the values
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(sub, name="")
    return graph


def _sizes(graph, names: set[str]) -> dict[str, int | None]:
    """Node -> bytes of all its outputs from static shapes (None if any is not fully known, or
    is a handle -- variant (TensorList, ...) or resource -- that has no value to keep as a Const)."""
    import tensorflow as tf

    sizes: dict[str, int | None] = {}
    for name in names:
        total = 0
        for tensor in graph.get_operation_by_name(name).outputs:
            if tensor.dtype in (tf.variant, tf.resource) or not tensor.shape.is_fully_defined():
                total = None
                break
            total += tensor.shape.num_elements() * (tensor.dtype.size or 32)  # strings: ~32 B
        sizes[name] = total
    return sizes


def _run(graph, tensors: list[tuple[str, int]]) -> list:
    import tensorflow as tf

    with tf.compat.v1.Session(graph=graph, config=lean_config()) as sess:
        return sess.run([f"{n}:{i}" for n, i in tensors])
