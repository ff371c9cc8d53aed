"""What flows between stages: one immutable State, replaced (never mutated) by each stage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphfreeze.names import TensorRef
from graphfreeze.tensors import TensorInfo

if TYPE_CHECKING:
    from graphfreeze.io.storage import Transaction
    from graphfreeze.sources.base import LoadedModel
    from tensorflow.core.framework.graph_pb2 import GraphDef


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
    # What the CLI prints under the "wrote" line: how an app uses the artifact.
    summary: tuple[str, ...] = ()
    # Intermediate tensors in the artifact's own runtime: probe(feeds, tensor names) -> {name:
    # array} for the names it can map (the divergence locator; see formats/NAME/probe.py).
    probe: Callable[[dict, list[str]], dict] | None = field(default=None, compare=False,
                                                            repr=False)
    # A quantized artifact's layers, worst first by TensorFlow's QuantizationDebugger on samples
    # ([array per input] each; `quantized_layers(samples, ranges)`), and the artifact
    # re-quantized with the named layers kept in float (`requantize(keep, ranges)`;
    # --quantize-until, see stages/verify/search.py).
    quantized_layers: Callable[[list], list[str]] | None = field(default=None, compare=False,
                                                                 repr=False)
    requantize: Callable[..., Artifact] | None = field(default=None, compare=False, repr=False)
    # The activation-range choices `requantize(keep, ranges)` takes, this artifact's first
    # (--quantize-until tries the others before keeping layers in float).
    range_choices: tuple[str, ...] = ()
    # Latency in the artifact's own runtime (--benchmark; see formats/NAME/latency.py):
    # latency(feeds, threads) -> (runtime label, threads it runs with, call): `call()` is one
    # inference on the feeds (inputs bound beforehand where the runtime allows), which
    # stages/benchmark.py warms up and times.
    latency: Callable[[dict, int], tuple[str, int, Callable[[], object]]] | None = field(
        default=None, compare=False, repr=False)


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

    @property
    def keep(self) -> list[str]:
        """Node names every graph pass must keep: outputs and inputs."""
        return [t.node for t in self.outputs] + [t.node for t in self.inputs]

    def noted(self, **facts) -> dict:
        return {**self.notes, **facts}
