"""The built-in graph passes, by name, and how a list of them runs.

The strip_training and optimize_for_inference stages take their pass lists as options (the
defaults below), so a target TOML can drop or add a pass and a plugin can register new ones
(entry-point group `graphfreeze.passes`). Each pass module is imported only when it runs. A pass
returns a PassResult saying whether it changed the graph (a plugin's bare GraphDef: `_result`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from graphfreeze.graph.consts import HELD
from graphfreeze.graph.graphdefs import copied, gc_paused
from graphfreeze.graph.passes.contract import GraphPass, PassContext, PassResult
from graphfreeze.graph.weights import attach

# strip_training's passes, in this order, repeated until none changes anything (a later one's
# result often lets an earlier one act: an inlined body has constants to fold)
STRIP_PASSES = (
    "float32_compute",  # first: every later pass, and folding, sees the float32 graph
    "drop_side_effect_controls",  # an Assert's or NoOp's control edge keeps a Const from folding
    "remove_identities",  # before folding: a weight's /read not evaluated into a second copy
    "fold_constants",  # the folded flags reach the predicates of Switch and If as constants
    "resolve_switches",  # v1 cond: the dead branch goes (with the training-only dropout in it)
    "inline_calls",  # v2 cond (If) and calls: the live body in the graph, for the passes above
    "remove_dropout",  # what is left of dropout, its pattern now in the graph, not a body
    "remove_identities",  # the Identities Merge, inlining and dropout removal leave
)
# optimize_for_inference's passes, once, in this order, on the stripped graph
OPTIMIZE_PASSES = (
    "fold_batch_norms",  # first: the statistics are Consts now (folded by strip_training)
    "fold_constants",  # the Mul/Add a batch norm not after a layer becomes, where constant
    "drop_neutral_ops",  # after the folds: a BiasAdd of zeros they made (no shift), x * 1
    "remove_identities",  # what the passes above left
    "canonicalize",  # last: devices and stale attrs cleared on the final nodes, and the
)                    # functions no kept node calls any more dropped

_BUILTIN = {  # name: (its module in graph/passes/, takes `owned`, summary)
    "float32_compute": ("mixed_precision", True, "float16 compute (mixed precision) in float32, "
                        "its casts folded away"),
    "drop_side_effect_controls": ("side_effect_controls", True,
                                  "drop control edges from side-effect ops (all, once no frames)"),
    "remove_identities": ("identities", True, "skip Identity-like ops"),
    "fold_constants": ("constfold", True, "evaluate what depends only on constants"),
    "resolve_switches": ("switches", True, "Switch/Merge with constant predicates resolved"),
    "inline_calls": ("calls", True, "If with constant predicates and calls inlined"),
    "remove_dropout": ("dropout", False, "dropout (any form) replaced by its input"),
    "fold_batch_norms": ("batchnorm", False, "batch norms and per-channel Mul/Add into layers"),
    "drop_neutral_ops": ("neutral_ops", True, "BiasAdd of zeros, x + 0, x * 1 dropped"),
    "canonicalize": ("canonicalize", True, "devices and _class cleared, unused functions dropped"),
    "rewrite_for_onnx": ("op_rewrites", True, "ops ONNX lacks as exact identities (Erfc: 1 - Erf; "
                         "an RFFT's Real/Imag/ComplexAbs: DFT MatMuls)"),
}


@dataclass(frozen=True)
class _Builtin:
    """A built-in pass's `run`: a module-level callable (so a plan pickles into batch workers)."""

    name: str
    module: str
    takes_owned: bool

    def __call__(self, graph_def, context: PassContext) -> PassResult:
        func = getattr(importlib.import_module(f"graphfreeze.graph.passes.{self.module}"), self.name)
        if self.name == "remove_dropout":  # (the graph, the dropouts it removed)
            graph_def, removed = func(graph_def, context.keep)
            context.notes.setdefault("dropouts_removed", []).extend(removed)
            return PassResult(graph_def, bool(removed))
        if self.name == "float32_compute":  # said: verification judges it as fp16 compute
            graph_def, widened = func(graph_def, context.keep, owned=context.owned)
            if widened:
                context.notes["float16_compute_widened"] = \
                    context.notes.get("float16_compute_widened", 0) + widened
            return PassResult(graph_def, bool(widened))
        if self.name == "fold_constants":
            return func(graph_def, context.keep, owned=context.owned, memo=context.memo)
        if self.takes_owned:
            return func(graph_def, context.keep, owned=context.owned)
        return func(graph_def, context.keep)


def _builtin(name: str, module: str, takes_owned: bool, summary: str) -> GraphPass:
    return GraphPass(name, _Builtin(name, module, takes_owned), summary)


def builtin_passes() -> list[GraphPass]:
    return [_builtin(name, *spec) for name, spec in _BUILTIN.items()]


def run_passes(graph_def, passes: list[GraphPass], keep: list[str], flags: dict, notes: dict,
               original=None, memo: dict | None = None) -> PassResult:
    """Run `passes` in order: the graph, and whether any pass changed it. A pass may edit the
    graph in place once it is no longer `original` (the caller's proto, never edited). `memo`:
    the run's (its TensorFlow child)."""
    original = graph_def if original is None else original
    changed = False
    for graph_pass in passes:
        if not isinstance(graph_pass.run, _Builtin) and HELD.get() is not None:
            if graph_def is original:  # (never edited)
                graph_def = copied(graph_def)
            attach(graph_def, HELD.get())  # a plugin's pass reads the values in the graph
        context = PassContext(keep, flags, owned=graph_def is not original, notes=notes,
                              memo={} if memo is None else memo)
        graph_def, changed_here = _result(graph_pass, graph_def, context)
        changed = changed or changed_here
    return PassResult(graph_def, changed)


def _result(graph_pass: GraphPass, graph_def, context: PassContext) -> PassResult:
    """The pass's PassResult; a plugin pass's bare GraphDef changed when its nodes' names, ops or
    inputs differ from before (taken first: the pass may edit in place)."""
    if isinstance(graph_pass.run, _Builtin):
        return graph_pass.run(graph_def, context)
    before = _signature(graph_def)
    result = graph_pass.run(graph_def, context)
    if isinstance(result, PassResult):
        return result
    return PassResult(result, _signature(result) != before)


def _signature(graph_def) -> tuple:
    return tuple((n.name, n.op, tuple(n.input)) for n in graph_def.node)


def _named(names: tuple[str, ...]) -> list[GraphPass]:
    by_name = {p.name: p for p in builtin_passes()}
    return [by_name[n] for n in names]


def strip_training(graph_def, keep: list[str], flags: dict, passes: list[GraphPass] | None = None,
                   max_rounds: int = 20, memo: dict | None = None) -> tuple[object, dict]:
    """Flags to inference values (a copy), then `passes` (default STRIP_PASSES) until nothing
    changes. Returns the graph and the notes the passes made (`dropouts_removed`)."""
    from graphfreeze.graph.passes.flags import fold_flags

    passes = _named(STRIP_PASSES) if passes is None else passes
    notes: dict = {"dropouts_removed": []}
    original = graph_def
    with gc_paused():
        graph_def = fold_flags(graph_def, flags)
        for _ in range(max_rounds):
            graph_def, changed = run_passes(graph_def, passes, keep, flags, notes, original, memo)
            if not changed:
                break
    return graph_def, notes


def optimize_for_inference(graph_def, keep: list[str], passes: list[GraphPass] | None = None,
                           memo: dict | None = None):
    """`passes` (default OPTIMIZE_PASSES) once, in order: batch norms folded, canonical form."""
    passes = _named(OPTIMIZE_PASSES) if passes is None else passes
    with gc_paused():
        return run_passes(graph_def, passes, keep, {}, {}, memo=memo).graph_def
