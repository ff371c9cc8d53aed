"""What a graph pass is, takes and returns (`plugins` exports them for plugins)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True)
class PassContext:
    """What a graph pass knows besides the graph: node names to keep, the flags folded, whether
    it may edit its input in place (`owned`), a notes dict it may add facts to, and the run's
    memo (`memo`: a pass that needs TensorFlow sends its work to the run's TensorFlow child
    through `process.tensorflow_child.call(memo, ...)`)."""

    keep: list[str]
    flags: dict
    owned: bool
    notes: dict
    memo: dict = field(default_factory=dict, repr=False)


class PassResult(NamedTuple):
    """What a graph pass returns (as onnx-ir's `PassResult`): the graph (the pass's input when
    it changed nothing) and whether the pass changed anything in it, attributes included (the
    strip stage repeats its passes until none did)."""

    graph_def: Any
    changed: bool


@dataclass(frozen=True)
class GraphPass:
    """`run(graph_def, context) -> PassResult`. Stage options list passes by name (`passes =
    [...]`); the plan puts each GraphPass in place of its name. A plugin's pass may return a
    bare GraphDef, as before PassResult: it counts as changed when its nodes' names, ops or
    inputs differ (an edit of attributes alone is not seen: return a PassResult to say it)."""

    name: str
    run: Callable[[Any, PassContext], Any] = field(repr=False)  # repr: stable across processes
    summary: str = ""
