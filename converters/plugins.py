"""The kinds of thing the registry holds, as leaf types (no imports of stages or sources), so
built-ins and plugins can declare them without import circles.

- `Stage`: one step of a target (`run(state, options) -> state`).
- `GraphPass`: one GraphDef rewrite the strip/optimize stages run, in the order their options list
  (with `PassContext` and `PassResult`: graph/passes/contract.py, here for plugins to import).
- `Source`: a kind of model on disk (detect, stem, typed options, load, describe, scan).
- `Target`: a named list of stage uses, from TOML.
- `Format`: an artifact format (one folder in `formats/`): its export stage, runtime (`open`
  -> `Session`), gaps, the Python modules it needs, and what its folder's optional modules say
  (`Format.part`): how Model Explorer draws it (`explorer.py`: an `Explorer`), the stock
  converter's repro script (`repro.py`), the op-library ops it takes (`text_ops.takes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphfreeze.graph.passes.contract import GraphPass, PassContext, PassResult  # noqa: F401
from graphfreeze.options import NoOptions

BUILTIN = "graphfreeze"


@dataclass(frozen=True)
class OpGaps:
    """What an artifact format cannot take, for `freeze inspect`: `line` is what is printed."""

    label: str  # e.g. "onnx"
    unsupported: list[str]
    line: str
    details: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"unsupported": self.unsupported, **self.details}


@dataclass(frozen=True)
class Stage:
    """One thing done to one model. `run(state, options) -> state`."""

    name: str
    run: Callable[[Any, Any], Any]
    consumes: str  # kind of state it needs: "model", "graph" or "artifact"
    produces: str
    options: type = NoOptions
    summary: str = ""
    suffix: str | None = None  # the file suffix, for stages that make an artifact
    # Called with the state the stage before this one gets, just before that stage runs, so
    # slow work this stage will need can start early and overlap it (verify's reference run).
    prepare: Callable[[Any, Any], None] | None = None
    # files it writes beside the artifact: `beside(artifact path, options) -> [paths]`, refused
    # up front when they exist (without --force) with the artifact's own
    beside: Callable[[str, Any], list[str]] | None = None
    # `floor(options)`: runs without TensorFlow in this process, what needs it going to the
    # run's TensorFlow child (process/tensorflow_child.py); None: imports TensorFlow here
    floor: Callable[[Any], bool] | None = None
    # source kinds whose files this (export) stage converts itself, in place of the graph
    # stages before it, given the model's interface (`Source.interface`) instead of a graph
    reads: tuple[str, ...] = ()
    # the artifact it makes is a folder (a SavedModel), which --force may replace; a file's
    # stage is refused an existing folder as -o
    folder: bool = False
    # takes a graph whose big constants' values are held apart (`State.weights`,
    # graph/weights.py); any other stage gets them put back first
    weights_apart: bool = False
    # reads the loaded model's own graph (state.model's graph_def, variables or reference run);
    # once no step left in the run does, the model lets its graph go (`LoadedModel.release`)
    source_graph: bool = True


def always(_options) -> bool:
    """`Stage.floor` of a stage that never needs TensorFlow in this process."""
    return True


class Source:
    """A kind of model on disk. Subclass it and set `name` (the kind), `options` (a frozen
    dataclass of the options this kind takes, e.g. `--tag`), `flag` (a CLI alias naming a path
    of this kind, or None) and `order` (detection: lower first; built-ins are 10-40); `floor`:
    `load` imports no TensorFlow (a run of floor stages then leaves it to a child process)."""

    name: str = ""
    summary: str = ""
    flag: str | None = None
    options: type = NoOptions
    order: int = 100
    floor: bool = False

    def detect(self, path: str) -> bool:
        """Whether `path` holds a model of this kind, from the files alone (no TensorFlow for
        local paths). May raise InputError for a model of this kind that is incomplete."""
        raise NotImplementedError

    def stem(self, path: str, options) -> str:
        """What artifact names start with (they go beside the source, never its own name)."""
        raise NotImplementedError

    def load(self, path: str, options, unsafe: bool):
        """The LoadedModel (sources/base.py) for `path`."""
        raise NotImplementedError

    def interface(self, path: str, options, unsafe: bool):
        """A LoadedModel of the model's own inputs and outputs only, without TensorFlow, for a
        stage that `reads` this kind's files itself (its `interface` is True); None when this
        kind has none, or not for these options."""
        return None

    def describe(self, path: str, options, unsafe: bool) -> dict:
        """inspect's report fields: size_bytes, variables, signatures, inputs, outputs, flags,
        op_counts and `graph` (the GraphDef whose ops per-format gaps are judged on)."""
        raise NotImplementedError

    def scan(self, path: str, options) -> list:
        """`freeze scan`'s checks of the model at `path`, from its files alone (nothing of the
        model loaded or run): the faults found, each an InputError naming the file and the node,
        layer or asset. A file that does not parse is one fault, raised. By default a kind has
        no checks, and says so."""
        from graphfreeze.errors import InputError

        return [InputError(f"{path}: graphfreeze has no scan for '{self.name}' models (a "
                           "plugin's source kind); convert it only if you trust it")]

    def weight_bytes(self, path: str, options, outputs, inputs=()) -> int | None:
        """The bytes of the weights `outputs` need (not past `inputs`), read off the files'
        records without reading the weights (a checkpoint's .index), for the size limits
        checked before a run (`Format.max_bytes`); None when not known that cheaply (the
        default)."""
        return None

    def files(self, path: str, options) -> list[str]:
        """Every file a load of `path` reads (what a batch cache key hashes): by default the
        file, or every file under the directory."""
        from graphfreeze.io import storage

        return [full for full, _ in storage.tree_files(path.rstrip("/") or path)]

    def kept(self, path: str, options) -> list[str]:
        """Files of the model a load does not read but a run must never replace (default:
        none)."""
        return []


class Session:
    """An artifact opened in its format's runtime (`Format.open`): what verification (`run`),
    the divergence locator (`tensors`, the names given to `open` as `keep`) and --benchmark
    (`bind`) call. Errors of the runtime on the artifact are `errors.RunError`."""

    label: str = ""  # the runtime and its version, as --benchmark records it
    threads: int = 2

    def run(self, feeds: dict) -> list:
        """The outputs in order, for {input name: array}."""
        raise NotImplementedError

    def tensors(self, feeds: dict) -> dict:
        """{tensor name: array} for the kept tensors this runtime can map (TensorFlow names)."""
        raise NotImplementedError

    def bind(self, feeds: dict) -> Callable[[], object]:
        """One inference on `feeds`, inputs bound beforehand where the runtime allows: what
        --benchmark times."""
        return lambda: self.run(feeds)


@dataclass(frozen=True)
class Explorer:
    """How Model Explorer draws a format (its folder's `explorer.py`: `EXPLORER`): `adapter`
    reads the file, running nothing; `reads`: what, in words; `keys(path, nodes)`: {TensorFlow
    node: its key in the adapter's graph}; `recognizes(path)` (without a sidecar);
    `layers(path, facts)`: (title, {key: (value, error / allowed)}) per layer, or None."""

    adapter: str
    reads: str
    keys: Callable[[str, list[str]], dict[str, str]]
    recognizes: Callable[[str], bool]
    layers: Callable[[str, dict], tuple[str, dict] | None] | None = None


@dataclass(frozen=True)
class Devices:
    """`freeze inspect --device NAME` for a format (its folder's `devices.py`: `DEVICES`): a file
    it `recognizes` (by its first bytes), else a model converted by `target`, `judge`d."""

    names: tuple[str, ...]
    label: str
    suffixes: tuple[str, ...]
    recognizes: Callable[[bytes], bool]
    target: str
    judge: Callable[[bytes, str], dict]


def by_index(graph_def, nodes: list[str]) -> dict[str, str]:
    """{node: its index in `graph_def`}: its key in Model Explorer's GraphDef adapters."""
    wanted = set(nodes)
    return {n.name: str(i) for i, n in enumerate(graph_def.node) if n.name in wanted}


def one_file(path: str) -> list[str]:
    """An artifact that is one file or one directory (`Format.parts`' default)."""
    return [path]


@dataclass(frozen=True)
class Format:
    """An artifact format: one folder in `formats/` (or a plugin's package) holding its export
    stage, its runtime, and its targets (`targets/*.toml` in the folder, found by the registry).

    `open(path, inputs, outputs, *, threads=2, keep=(), untrusted=False, loaded=None)` opens
    the artifact at `path` (whose inputs and outputs are TensorInfos) as a `Session`;
    `untrusted`: a file read back later (`freeze verify`), checked first where the runtime
    could touch the host; `loaded`: what the export holds in memory of it (a GraphDef), so it
    is not read back. `parts(path)`: the files the artifact is made of (`.xml` + `.bin`).
    `gaps(graph_def, ops)`: what the format cannot take (`freeze inspect`). `describe(path)`:
    what `freeze inspect` reports of an artifact file of this format, read by its runtime's own
    tools ({inputs, outputs, op_counts, ...}), or None when the file is not one. `max_bytes`:
    the most weight bytes its export writes (a frozen GraphDef is one protobuf: 2 GiB), more
    refused before any work (`plan.check_size`); None: no limit. `requires`: the
    Python modules it imports, installed by the `EXTRA` extra. `floor`: `open`
    imports no TensorFlow (a run with a TensorFlow child runs the artifact here, beside it).

    The rest of what a format does is its folder's (`part`): `explorer.py` (`EXPLORER`: how
    Model Explorer draws it; none: --explain cannot draw it), `repro.py` (`script(options, pb,
    inputs, outputs, compare)`: the stock converter's part of `freeze reduce`'s repro script),
    `text_ops.py` (`takes(op)`: an op-library op it runs), `devices.py` (`DEVICES`: `freeze
    inspect --device`), `flags.json` (its flags, read by the CLI without importing it)."""

    name: str
    export: Stage
    open: Callable[..., Session]
    gaps: Callable[[Any, set], OpGaps] | None = None
    describe: Callable[[str], dict | None] | None = None
    max_bytes: int | None = None
    requires: tuple[str, ...] = ()
    extra: str | None = None
    stages: tuple[Stage, ...] = ()  # more stages the format brings (after its export)
    parts: Callable[[str], list[str]] = field(default=one_file, repr=False)
    floor: bool = False

    def missing(self) -> list[str]:
        """The required modules that are not installed (found without importing them)."""
        import importlib.util

        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    @property
    def package(self) -> str:
        """The package (folder) the format is: its export stage's."""
        import sys

        module = self.export.run.__module__
        return getattr(sys.modules.get(module), "__package__", None) or module.rpartition(".")[0]

    def part(self, name: str, attr: str):
        """`attr` of the format folder's module `name`, or None when it has no such module."""
        import importlib
        import importlib.util

        module = f"{self.package}.{name}"
        if importlib.util.find_spec(module) is None:
            return None
        return getattr(importlib.import_module(module), attr, None)

    @property
    def explorer(self) -> Explorer | None:
        return self.part("explorer", "EXPLORER")

    def takes(self, op: str) -> bool:
        """Whether the format's runtime runs op-library op `op` (a TF-Text op)."""
        takes = self.part("text_ops", "takes")
        return bool(takes and takes(op))


@dataclass(frozen=True)
class StageUse:
    use: str
    options: dict


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    stages: tuple[StageUse, ...]
    provider: str = BUILTIN
    # a target named NAME:VALUE (npu-qualcomm:SM8650) sets option `parameter` to VALUE in each
    # stage use that declares it
    parameter: str | None = None

    def given(self, value: str) -> Target:
        """This target with its parameter set: named `name:value`."""
        stages = tuple(StageUse(u.use, {**u.options, self.parameter: value})
                       if self.parameter in u.options else u for u in self.stages)
        return Target(f"{self.name}:{value}", self.description, stages, self.provider,
                      self.parameter)
