"""strip_training and optimize_for_inference: lists of graph passes (GraphDef rewrites, no
session needed), named in the stage options so a target can drop or add one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.errors import InputError
from graphfreeze.graph.composites import composite_calls, refusal
from graphfreeze.graph.passes.builtin import (
    OPTIMIZE_PASSES,
    STRIP_PASSES,
    optimize_for_inference,
    strip_training,
)
from graphfreeze.graph.weights import Weights, held
from graphfreeze.options import OptionValueError
from graphfreeze.plugins import GraphPass, Stage, always


@dataclass(frozen=True)
class StripOptions:
    max_rounds: int = 20
    # run in order, repeated until no pass says it changed the graph (names; the plan resolves
    # them; the default order's reasons: graph/passes/builtin.STRIP_PASSES)
    passes: tuple[str | GraphPass, ...] = STRIP_PASSES
    # composite functions (`_implements`, never inlined): "keep" where the export replaces them
    # by their op (the tflite targets), else "refuse" (one line naming them)
    composites: str = "refuse"

    def __post_init__(self):
        if self.composites not in ("refuse", "keep"):
            raise OptionValueError("composites", repr(self.composites), "choose refuse or keep")


def strip(state, options: StripOptions):
    with held(_owned(state)) as weights:
        graph_def, notes = _strip(state, options)
    return _with_graph(state, graph_def, weights, notes)


def _strip(state, options: StripOptions):
    graph_def, notes = strip_training(state.graph_def, state.keep, state.flags, list(options.passes),
                                      options.max_rounds, state.memo)
    calls = composite_calls(graph_def) if options.composites == "refuse" else []
    stand_ins = [c for c in calls if c.stand_in]
    if stand_ins:
        raise InputError(refusal(stand_ins, state.model.graph_file, state.target or "this target"))
    if calls:  # bodies that are the computation: inlined, and said
        from graphfreeze.graph.passes.calls import inline_composites

        graph_def, _ = strip_training(inline_composites(graph_def, state.keep).graph_def,
                                      state.keep, state.flags, list(options.passes),
                                      options.max_rounds, state.memo)
        notes = {**notes, "composites_inlined": sorted({f"{c.function} ({c.implements})"
                                                        for c in calls})}
    return graph_def, notes


def _owned(state) -> Weights | None:
    return state.weights.owned() if state.weights is not None else None


def _with_graph(state, graph_def, weights: Weights | None, notes: dict):
    if weights is not None:
        weights.keep_only(graph_def)
    return dataclasses.replace(state, graph_def=graph_def, weights=weights,
                               notes=state.noted(**notes))


@dataclass(frozen=True)
class OptimizeOptions:
    passes: tuple[str | GraphPass, ...] = OPTIMIZE_PASSES  # run once, in order (builtin's reasons)


def optimize(state, options: OptimizeOptions):
    with held(_owned(state)) as weights:
        graph_def = optimize_for_inference(state.graph_def, state.keep, list(options.passes),
                                           state.memo)
    return _with_graph(state, graph_def, weights, {})


STRIP_STAGE = Stage("strip_training", strip, "graph", "graph", StripOptions,
                    "fold training flags, resolve control flow, drop dropout, asserts, identities",
                    floor=always, weights_apart=True, source_graph=False)
OPTIMIZE_STAGE = Stage("optimize_for_inference", optimize, "graph", "graph", OptimizeOptions,
                       "fold batch norms and constants into layers; canonical node order",
                       floor=always, weights_apart=True, source_graph=False)
