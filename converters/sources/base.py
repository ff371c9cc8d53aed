"""What every source gives the pipeline: the original graph, its variables, a reference run."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class VariableSpec:
    """Where a graph's variable node finds its value in a checkpoint."""

    node: str
    key: str
    slice: str = ""
    dtype: int = 0  # a tensorflow DataType enum value
    shape: tuple[int, ...] | None = None


def faults(check, *args) -> list:
    """[the InputError `check(*args)` raises] or [] (a scan check reports its first fault)."""
    from graphfreeze.errors import InputError

    try:
        check(*args)
    except InputError as err:
        return [err]
    return []


class LoadedModel(Protocol):
    kind: str
    location: str  # the path the user gave, for messages and the sidecar
    graph_file: str  # the file holding the graph, for messages
    graph_def: Any
    variables: dict[str, VariableSpec]
    memo: dict  # results stages share across a run's targets (e.g. the reference outputs)
    # The model's own input/output names (a signature's keys, Keras layer names), or None when
    # the files don't say (checkpoints, frozen graphs): then the user names them.
    default_inputs: list[str] | None
    default_outputs: list[str] | None
    notes: dict  # facts about the source for the sidecar (e.g. which tfmot wrappers were stripped)

    def check_variables(self, nodes: list[str]) -> None:
        """Raise InputError if a variable is missing or shaped unlike the graph says."""

    def read_variables(self, nodes: list[str]) -> Iterator[tuple[str, Any]]:
        """(node, numpy value) for each variable node, in order, a few at a time."""

    def run_reference(self, graph_def, feeds: dict[str, Any], fetches: list[str]) -> list[Any]:
        """Run `graph_def` (a pruned copy of the original) with variables restored."""

    # Optional: `release()` lets the graph go (graph_def None after it); see `release` below.
    # Optional: `validated = False`: the source left graph_def unvalidated (a big training
    # graph), so the run validates the part its outputs and inputs need before reading it.
    # Optional: `values_owned = True`: read_variables yields fresh arrays nothing else holds
    # (a graph pass may then edit them in place: graph/weights.Weights.editable).


def release(model) -> None:
    """Let `model`'s graph go, if it can (`LoadedModel.release`): the run does once no stage left
    reads it (plugins.Stage.source_graph)."""
    if hasattr(model, "release"):
        model.release()
