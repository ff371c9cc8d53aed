"""A pass's last step: what the kept nodes no longer reach dropped, said as a `PassResult`."""

from __future__ import annotations

from graphfreeze.graph.graphdefs import extract
from graphfreeze.graph.passes.contract import PassResult


def pruned(graph_def, keep: list[str], owned: bool = False, changed: bool = False) -> PassResult:
    """`graph_def` without what `keep` does not reach (`owned`: in place); changed when the pass
    had (`changed`) or a node or a function went."""
    size = len(graph_def.node), len(graph_def.library.function)
    out = extract(graph_def, keep, owned=owned)
    return PassResult(out, changed or (len(out.node), len(out.library.function)) != size)
