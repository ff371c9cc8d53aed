"""What flows between stages: one immutable State, replaced (never mutated) by each stage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphfreeze.names import TensorRef


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output as the sidecar and the Android app see it."""

    name: str  # "x:0"
    dtype: str  # "float32"
    shape: tuple[int | None, ...] | None  # None: unknown rank

    def as_json(self) -> dict:
        return {"name": self.name, "node": self.name.rsplit(":", 1)[0], "dtype": self.dtype,
                "shape": None if self.shape is None else list(self.shape)}


@dataclass(frozen=True)
class Artifact:
    """A file written to a temporary sibling of `path`, and what the sidecar says about it."""

    path: str
    sha256: str
    size: int
    format: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    facts: dict = field(default_factory=dict)
    # Runs the staged file on {input name: array} and returns the outputs in order (verify).
    run: Callable[[dict], list] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Settings:
    """Run-wide choices from the command line."""

    output: str | None = None  # -o PATH (single target)
    force: bool = False


@dataclass(frozen=True)
class State:
    model: Any  # a graphfreeze.sources.base.LoadedModel
    outputs: tuple[TensorRef, ...]
    inputs: tuple[TensorRef, ...]
    flags: dict[str, object]
    target: str = ""
    output_path: str = ""
    graph_def: Any = None
    batch: Any = None  # graphfreeze.storage.Batch the artifacts are staged into
    artifact: Artifact | None = None
    notes: dict = field(default_factory=dict)  # facts stages record for the sidecar

    @property
    def keep(self) -> list[str]:
        """Node names every graph pass must keep: outputs and inputs."""
        return [t.node for t in self.outputs] + [t.node for t in self.inputs]

    def noted(self, **facts) -> dict:
        return {**self.notes, **facts}
