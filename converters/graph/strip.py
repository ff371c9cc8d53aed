"""The strip and optimize passes as whole-graph functions (GraphDef in, GraphDef out)."""

from __future__ import annotations

from graphfreeze.graph.batchnorm import fold_batch_norms
from graphfreeze.graph.constfold import fold_constants
from graphfreeze.graph.control_flow import inline_calls, resolve_switches
from graphfreeze.graph.dropout import remove_dropout
from graphfreeze.graph.flags import fold_flags
from graphfreeze.graph.simplify import (
    canonicalize,
    drop_neutral_ops,
    drop_side_effect_controls,
    remove_identities,
)
from tensorflow.core.framework import graph_pb2


def _signature(graph_def) -> tuple:
    return tuple((n.name, n.op, tuple(n.input)) for n in graph_def.node)


def strip_training(graph_def, keep: list[str], flags: dict[str, object],
                   max_rounds: int = 20) -> tuple[graph_pb2.GraphDef, list[str]]:
    """Flags to inference values, then fold/resolve/inline/strip until nothing changes.

    Returns the graph and the names of the dropouts removed.
    """
    graph_def = fold_flags(graph_def, flags)  # a copy: every pass below may edit it in place
    dropouts: list[str] = []
    for _ in range(max_rounds):
        before = _signature(graph_def)
        graph_def = drop_side_effect_controls(graph_def, keep, owned=True)
        graph_def = remove_identities(graph_def, keep, owned=True)  # first: no Identity(Const) to evaluate
        graph_def = fold_constants(graph_def, keep, owned=True)
        graph_def = resolve_switches(graph_def, keep, owned=True)
        graph_def = inline_calls(graph_def, keep, owned=True)
        graph_def, removed = remove_dropout(graph_def, keep)
        dropouts += removed
        graph_def = remove_identities(graph_def, keep, owned=True)
        if _signature(graph_def) == before:
            break
    return graph_def, dropouts


def optimize_for_inference(graph_def, keep: list[str],
                           batch_norms: bool = True) -> graph_pb2.GraphDef:
    """Fold batch norms and per-channel constants into layers, refold, canonical form."""
    original = graph_def
    if batch_norms:
        graph_def = fold_batch_norms(graph_def, keep)
    graph_def = fold_constants(graph_def, keep, owned=graph_def is not original)
    graph_def = drop_neutral_ops(graph_def, keep, owned=graph_def is not original)
    graph_def = remove_identities(graph_def, keep, owned=graph_def is not original)
    return canonicalize(graph_def, keep, owned=graph_def is not original)
