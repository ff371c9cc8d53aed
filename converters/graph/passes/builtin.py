"""The built-in graph passes, by name, and how a list of them runs.

The strip_training and optimize_for_inference stages take their pass lists as options (the
defaults below), so a target TOML can drop or add a pass and a plugin can register new ones
(entry-point group `graphfreeze.passes`). Each pass module is imported only when it runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from graphfreeze.graph.consts import HELD
from graphfreeze.graph.graphdefs import copied, gc_paused
from graphfreeze.graph.weights import attach
from graphfreeze.plugins import GraphPass, PassContext

STRIP_PASSES = ("float32_compute", "drop_side_effect_controls", "remove_identities",
                "fold_constants", "resolve_switches", "inline_calls", "remove_dropout",
                "remove_identities")
OPTIMIZE_PASSES = ("fold_batch_norms", "fold_constants", "drop_neutral_ops", "remove_identities",
                   "canonicalize")

_BUILTIN = {  # name: (module in graphfreeze.graph, function, takes `owned`, summary)
    "float32_compute": ("mixed_precision", True, "float16 compute (mixed precision) in float32, "
                        "its casts folded away"),
    "drop_side_effect_controls": ("simplify", True,
                                  "drop control edges from side-effect ops (all, once no frames)"),
    "remove_identities": ("simplify", True, "skip Identity-like ops"),
    "fold_constants": ("constfold", True, "evaluate what depends only on constants"),
    "resolve_switches": ("control_flow", True, "Switch/Merge with constant predicates resolved"),
    "inline_calls": ("control_flow", True, "If with constant predicates and calls inlined"),
    "remove_dropout": ("dropout", False, "dropout (any form) replaced by its input"),
    "fold_batch_norms": ("batchnorm", False, "batch norms and per-channel Mul/Add into layers"),
    "drop_neutral_ops": ("simplify", True, "BiasAdd of zeros, x + 0, x * 1 dropped"),
    "canonicalize": ("simplify", True, "devices and _class cleared, unused functions dropped"),
    "rewrite_for_onnx": ("op_rewrites", True, "ops ONNX lacks as exact identities (Erfc: 1 - Erf; "
                         "an RFFT's Real/Imag/ComplexAbs: DFT MatMuls)"),
}


@dataclass(frozen=True)
class _Builtin:
    """A built-in pass's `run`: a module-level callable (so a plan pickles into batch workers)."""

    name: str
    module: str
    takes_owned: bool

    def __call__(self, graph_def, context: PassContext):
        func = getattr(importlib.import_module(f"graphfreeze.graph.passes.{self.module}"), self.name)
        if self.name == "remove_dropout":
            graph_def, removed = func(graph_def, context.keep)
            context.notes.setdefault("dropouts_removed", []).extend(removed)
            return graph_def
        if self.name == "float32_compute":  # said: verification judges it as fp16 compute
            graph_def, widened = func(graph_def, context.keep, owned=context.owned)
            if widened:
                context.notes["float16_compute_widened"] = \
                    context.notes.get("float16_compute_widened", 0) + widened
            return graph_def
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
               original=None, memo: dict | None = None):
    """Run `passes` in order; a pass may edit the graph in place once it is no longer
    `original` (the caller's proto, never edited). `memo`: the run's (its TensorFlow child)."""
    original = graph_def if original is None else original
    for graph_pass in passes:
        if not isinstance(graph_pass.run, _Builtin) and HELD.get() is not None:
            if graph_def is original:  # (never edited)
                graph_def = copied(graph_def)
            attach(graph_def, HELD.get())  # a plugin's pass reads the values in the graph
        context = PassContext(keep, flags, owned=graph_def is not original, notes=notes,
                              memo={} if memo is None else memo)
        graph_def = graph_pass.run(graph_def, context)
    return graph_def


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
            before = _signature(graph_def)
            graph_def = run_passes(graph_def, passes, keep, flags, notes, original, memo)
            if _signature(graph_def) == before:
                break
    return graph_def, notes


def optimize_for_inference(graph_def, keep: list[str], passes: list[GraphPass] | None = None,
                           memo: dict | None = None):
    """`passes` (default OPTIMIZE_PASSES) once, in order: batch norms folded, canonical form."""
    passes = _named(OPTIMIZE_PASSES) if passes is None else passes
    with gc_paused():
        return run_passes(graph_def, passes, keep, {}, {}, memo=memo)
