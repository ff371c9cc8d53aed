"""strip_training and optimize_for_inference: GraphDef rewrites, no session needed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.registry import Stage


@dataclass(frozen=True)
class StripOptions:
    max_rounds: int = 20


def strip(state, options: StripOptions):
    from graphfreeze.graph.strip import strip_training

    graph_def, dropouts = strip_training(state.graph_def, state.keep, state.flags,
                                         options.max_rounds)
    return dataclasses.replace(state, graph_def=graph_def,
                               notes=state.noted(dropouts_removed=dropouts))


@dataclass(frozen=True)
class OptimizeOptions:
    fold_batch_norms: bool = True


def optimize(state, options: OptimizeOptions):
    from graphfreeze.graph.strip import optimize_for_inference

    graph_def = optimize_for_inference(state.graph_def, state.keep, options.fold_batch_norms)
    return dataclasses.replace(state, graph_def=graph_def)


STRIP_STAGE = Stage("strip_training", strip, "graph", "graph", StripOptions,
                    "fold training flags, resolve control flow, drop dropout, asserts, identities")
OPTIMIZE_STAGE = Stage("optimize_for_inference", optimize, "graph", "graph", OptimizeOptions,
                       "fold batch norms and constants into layers; canonical node order")
