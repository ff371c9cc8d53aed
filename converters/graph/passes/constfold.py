"""Constant folding: evaluate once what depends only on constants, keep the frontier as Consts.

Only what the kept nodes need is folded. Sizes are checked before anything runs: every
candidate's outputs get their static shapes from graph/shapes (else TensorFlow's importer), and
a node whose result is unknown in size, over MAX_FOLD_BYTES, grows its inputs past
MAX_GROWTH_BYTES, or would take the run past MAX_FOLD_TOTAL stays an op (a `Fill` of 4 TiB is
never materialised).
"""

from __future__ import annotations

import math

from graphfreeze.graph.consts import HELD, make_const
from graphfreeze.graph.fake_quant import FAKE_QUANT_OPS
from graphfreeze.graph.graphdefs import (
    is_control,
    reachable,
    replace_nodes,
    rewire,
    split_tensor,
    tensor_name,
    topo_order,
)
from graphfreeze.graph.passes.contract import PassResult
from graphfreeze.graph.passes.pruned import pruned
from graphfreeze.graph.weights import attach
from graphfreeze.proto.dtypes import RESOURCE, VARIANT, itemsize

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


def fold_constants(graph_def, keep: list[str], owned: bool = False, memo: dict | None = None
                   ) -> PassResult:
    """Replace every non-Const node computable from Consts alone by its value (sizes allowing).

    `keep` are output node names: they survive (as Consts if folded) and define what is kept.
    `owned=True`: edit `graph_def` in place. The values are computed by TensorFlow, in the run's
    TensorFlow child if it has one (`memo`), else here.
    """
    from graphfreeze.process import tensorflow_child

    order = topo_order(graph_def)
    # A Const with control inputs may sit in a cond branch (its frame): it is not a free value.
    const = {n.name for n in graph_def.node
             if n.op == "Const" and not any(is_control(i) for i in n.input)}
    needed = reachable(graph_def, keep)
    candidates = _computable(order, const,
                             lambda node: node.name in needed and _foldable_op(node.op))
    if not candidates:
        return PassResult(graph_def, False)
    read = {(k, 0) for k in keep if k in candidates} | _read_by(
        (n for n in graph_def.node if n.name in needed and n.name not in candidates), candidates)
    # control inputs the sub-graph drops: a candidate waiting for another folds only with it
    controls = {n.name: waits for n in order if n.name in candidates and
                (waits := [i[1:] for i in n.input if is_control(i) and i[1:] not in const])}
    foldable, values = tensorflow_child.call(
        memo or {}, evaluate, _subgraph(graph_def, order, candidates, const),
        [n.name for n in order if n.name in candidates], sorted(read), controls)
    if not values:
        return pruned(graph_def, keep, owned) if foldable else PassResult(graph_def, False)
    new_nodes, mapping = [], {}
    for (name, index), value in values:
        new_name = name if index == 0 else f"{name}/output_{index}"
        new_nodes.append(make_const(new_name, value))
        if index != 0:
            mapping[tensor_name(name, index)] = new_name
    graph = rewire(replace_nodes(graph_def, new_nodes, owned=owned), mapping, owned=True)
    return pruned(graph, keep, owned=True, changed=True)


def evaluate(sub, order: list[str], read: list[tuple[str, int]], controls: dict):
    """(the nodes of `order` that fold, [((node, index), value)] for each of their outputs that
    `read` or an op left in `sub` reads), for `sub`: candidates (`order`, topologically) and the
    Consts they read, without control edges (`controls`: the candidates each waits for). Sizes
    come first, from static shapes: nothing big is evaluated. A run that fails (an integer
    divided by zero, ...) folds nothing: the graph fails as it runs, as it would have."""
    from graphfreeze.graph.session import is_run_error, run_graph_def

    by_name = {n.name: n for n in sub.node}
    const = {n.name for n in sub.node if n.op == "Const"}
    sizes = _sizes(sub)
    budget = [MAX_FOLD_TOTAL]
    foldable = _computable([by_name[n] for n in order], const,
                           lambda node: _fits(node, sizes, budget), controls)
    wanted = {t for t in read if t[0] in foldable} | \
        _read_by((n for n in sub.node if n.name not in foldable), foldable)
    if not wanted:
        return foldable, []
    wanted = sorted(wanted)
    try:
        # `node:index` always: TensorFlow's Python session reads a bare `node` as the op (its
        # value None), which it runs when the C API cannot (a string fetch)
        values = run_graph_def(sub, {}, [f"{n}:{i}" for n, i in wanted])
    except Exception as err:  # noqa: BLE001 -- TensorFlow's run error: left to the graph's run
        if not is_run_error(err):
            raise
        return set(), []
    return foldable, list(zip(wanted, values, strict=True))


def _read_by(nodes, sources: set[str]) -> set[tuple[str, int]]:
    """The outputs of `sources` that `nodes` read (as data)."""
    return {t for node in nodes for t in map(split_tensor, node.input)
            if t[0] in sources and t[1] >= 0}


def _computable(order, const: set[str], allowed, controls: dict | None = None) -> set[str]:
    """Nodes (in topological `order`) `allowed` whose data and control inputs (and the nodes
    `controls` says they wait for) are all Consts or such nodes themselves."""
    done: set[str] = set()
    for node in order:
        if node.name in const or not node.input or \
                any(i.startswith("^") and i[1:] not in const and i[1:] not in done
                    for i in node.input) or \
                any(c not in done for c in (controls or {}).get(node.name, ())):
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


def _subgraph(graph_def, order, names: set[str], const: set[str]):
    """The candidates and the Consts they read (in `order`), control edges and colocations
    dropped (values never depend on them; they may name nodes left out), the function library
    only if a node names a function, with their held values (TensorFlow computes with them)."""
    inputs = {split_tensor(i)[0] for n in order if n.name in names for i in n.input}
    sub = type(graph_def)()
    sub.versions.CopyFrom(graph_def.versions)
    sub.node.extend(n for n in order if n.name in names or (n.name in inputs and n.name in const))
    for node in sub.node:
        kept = [i for i in node.input if not is_control(i)]
        del node.input[:]
        node.input.extend(kept)
        node.attr.pop("_class", None)
    if any(a.func.name or a.list.func for n in sub.node for a in n.attr.values()):
        sub.library.CopyFrom(graph_def.library)
    if HELD.get() is not None:
        attach(sub, HELD.get())
    return sub


def _sizes(sub) -> dict[str, int | None]:
    """Node -> bytes of all its outputs from static shapes (None if any is not fully known, or
    is a handle -- variant (TensorList, ...) or resource -- that has no value to keep as a
    Const): by graph/shapes, else TensorFlow's importer (its C API, else its Python API)."""
    sizes: dict[str, int | None] = {}
    for name, outputs in _output_types(sub).items():
        total = 0
        for dtype, shape in outputs:
            if dtype in (RESOURCE, VARIANT) or shape is None or None in shape:
                total = None
                break
            total += math.prod(shape) * (itemsize(dtype) or 32)  # strings: ~32 B
        sizes[name] = total
    return sizes


def _output_types(sub) -> dict[str, list]:
    from graphfreeze.graph import c_session
    from graphfreeze.graph.shapes.infer import infer

    try:
        return infer(sub)
    except Exception:  # noqa: BLE001 -- Unsupported, a fault or a bug here: TensorFlow says
        pass
    try:
        with c_session.imported(sub) as graph:
            return {n.name: graph.output_types(n.name) for n in sub.node}
    except c_session.Unsupported:
        pass
    from graphfreeze.graph.session import import_graph

    graph = import_graph(sub)
    return {n.name: [(t.dtype.as_datatype_enum,
                      None if t.shape.rank is None else tuple(t.shape.as_list()))
                     for t in graph.get_operation_by_name(n.name).outputs] for n in sub.node}
