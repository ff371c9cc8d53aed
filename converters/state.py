"""What flows between stages: one immutable State, replaced (never mutated) by each stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphfreeze.names import TensorRef
from graphfreeze.tensors import TensorInfo

if TYPE_CHECKING:
    from graphfreeze.graph.weights import Weights
    from graphfreeze.io.storage import Transaction
    from graphfreeze.plugins import Format, Session
    from graphfreeze.sources.base import LoadedModel
    from tensorflow.core.framework.graph_pb2 import GraphDef


@dataclass(frozen=True)
class Artifact:
    """A file written to a temporary sibling of `path` (`staged`: where its runtime opens it
    until commit), what the sidecar says about it, and its format, whose runtime runs it."""

    path: str
    sha256: str
    size: int
    format: Format
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    staged: str = ""
    facts: dict = field(default_factory=dict)
    # What the CLI prints under the "wrote" line: how an app uses the artifact.
    summary: tuple[str, ...] = ()
    # What the export holds in memory of the staged file (a frozen GraphDef), given to the
    # runtime so it does not read it back.
    loaded: Any = field(default=None, compare=False, repr=False)
    # A quantized artifact's handle for --quantize-until (stages/verify/search.py): `layers(
    # samples, ranges)` worst first, `requantize(keep, ranges) -> Artifact` with the named layers
    # kept in float, `range_choices` (the activation ranges it takes, its own first).
    quantizer: Any = field(default=None, compare=False, repr=False)

    def open(self, threads: int = 2, keep: tuple[str, ...] = ()) -> Session:
        """The staged artifact in its format's runtime (see plugins.Format.open)."""
        return self.format.open(self.staged or self.path, self.inputs, self.outputs,
                                threads=threads, keep=keep, loaded=self.loaded)


@dataclass(frozen=True)
class State:
    model: LoadedModel
    outputs: tuple[TensorRef, ...]
    inputs: tuple[TensorRef, ...]
    flags: dict[str, object]
    target: str = ""
    output_path: str = ""
    graph_def: GraphDef | None = None
    files: Transaction | None = None  # the artifacts are staged into it
    artifact: Artifact | None = None
    notes: dict = field(default_factory=dict)  # facts stages record for the sidecar
    # Results shared by every target of one run (io infos, the reference outputs).
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # graph_def's big constants' values, held apart from it (graph/weights.py), or None
    weights: Weights | None = field(default=None, compare=False, repr=False)
    # this step is the run's last to read the model's own graph (plugins.Stage.source_graph):
    # it may let it go (sources.base.release) as soon as it is done with it
    release_source: bool = False

    @property
    def keep(self) -> list[str]:
        """Node names every graph pass must keep: outputs, inputs, the tables' initializer."""
        init = self.model.notes.get("table_init") if self.model is not None else None
        return [t.node for t in self.outputs] + [t.node for t in self.inputs] + \
            ([init] if init else [])

    def noted(self, **facts) -> dict:
        return {**self.notes, **facts}
