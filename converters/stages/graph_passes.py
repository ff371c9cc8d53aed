"""strip_training and optimize_for_inference: lists of graph passes (GraphDef rewrites, no
session needed), named in the stage options so a target can drop or add one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.graph.passes.builtin import (
    OPTIMIZE_PASSES,
    STRIP_PASSES,
    optimize_for_inference,
    strip_training,
)
from graphfreeze.plugins import Stage


@dataclass(frozen=True)
class StripOptions:
    max_rounds: int = 20
    passes: tuple[str, ...] = STRIP_PASSES  # run in order, repeated until nothing changes


def strip(state, options: StripOptions):
    passes = [state.registry.graph_pass(name) for name in options.passes]
    graph_def, notes = strip_training(state.graph_def, state.keep, state.flags, passes,
                                      options.max_rounds)
    return dataclasses.replace(state, graph_def=graph_def, notes=state.noted(**notes))


@dataclass(frozen=True)
class OptimizeOptions:
    passes: tuple[str, ...] = OPTIMIZE_PASSES  # run once, in order


def optimize(state, options: OptimizeOptions):
    passes = [state.registry.graph_pass(name) for name in options.passes]
    return dataclasses.replace(state, graph_def=optimize_for_inference(state.graph_def,
                                                                       state.keep, passes))


STRIP_STAGE = Stage("strip_training", strip, "graph", "graph", StripOptions,
                    "fold training flags, resolve control flow, drop dropout, asserts, identities")
OPTIMIZE_STAGE = Stage("optimize_for_inference", optimize, "graph", "graph", OptimizeOptions,
                       "fold batch norms and constants into layers; canonical node order")
