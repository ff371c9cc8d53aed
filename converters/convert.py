"""The one entry point the CLI (and any Python caller) uses: load, plan, run, write."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from graphfreeze import __version__, memory, names, plan, storage
from graphfreeze.errors import InputError, OutputError
from graphfreeze.registry import Registry
from graphfreeze.state import State


@dataclass(frozen=True)
class Request:
    """What the user asked for."""

    source: str  # path as given
    kind: str = "auto"  # or one of graphfreeze.sources.detect.KINDS
    meta: str | None = None
    step: int | None = None
    tag: str = "serve"
    signature: str = "serving_default"
    custom_objects: tuple[str, ...] = ()
    unsafe: bool = False
    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    targets: tuple[str, ...] = ("android",)
    output: str | None = None
    force: bool = False
    verify: bool = True
    overrides: dict = field(default_factory=dict)

    def __post_init__(self):
        for name in ("source", "meta", "output"):  # `~/models/x` from a manifest or a quoted flag
            object.__setattr__(self, name, storage.expand(getattr(self, name)))


@dataclass(frozen=True)
class Written:
    target: str
    path: str
    sidecar_path: str
    sidecar: dict


def load_source(request: Request):
    from graphfreeze.sources.detect import load

    return load(request)


def output_paths(request: Request, plans: list[plan.TargetPlan], stem: str) -> dict[str, str]:
    """Where each target's artifact goes: -o for one target, else beside the source (or in
    -o DIR/). The target's name goes into the file name when targets share a suffix."""
    out = request.output
    if out and len(plans) == 1 and not out.endswith("/"):
        return {plans[0].target.name: out}
    folder = out.rstrip("/") if out else None
    suffixes = [p.suffix for p in plans]
    paths = {}
    for p in plans:
        shared = suffixes.count(p.suffix) > 1 and p.target.name != p.suffix.lstrip(".")
        name = stem + (f".{p.target.name}" if shared else "") + p.suffix
        paths[p.target.name] = storage.join(folder, storage.basename(name)) if folder else name
    return paths


def source_stem(request: Request) -> str:
    from graphfreeze.sources.detect import stem

    return stem(request)


def initial_state(request: Request, model) -> State:
    where = model.graph_file
    wanted = list(request.outputs) or model.default_outputs or []
    if not wanted:
        likely = names.likely_outputs(model.graph_def)
        listed = ", ".join(likely) if likely else "none found"
        raise InputError(f"no --outputs given for {where}; likely outputs: {listed}")
    outputs = names.resolve(model.graph_def, wanted, "output", where)
    given = names.resolve(model.graph_def, list(request.inputs), "input", where)
    from graphfreeze.graph.graphdefs import reachable

    needed = reachable(model.graph_def, [o.node for o in outputs], [i.node for i in given])
    for ref in given:
        if ref.node not in needed:
            raise InputError(f"input '{ref.name}' is not needed by outputs "
                             f"{', '.join(wanted)} in {where}; drop it from --inputs")
    if not given and not request.outputs and model.default_inputs:
        # the model's own inputs (as named), those its own outputs use
        own = names.resolve(model.graph_def, model.default_inputs, "input", where)
        given = [ref for ref in own if ref.node in needed]
    flags = names.flag_nodes(model.graph_def, needed, {i.node for i in given})
    inputs = given or names.default_inputs(model.graph_def, outputs, set(flags))
    return State(model=model, outputs=tuple(outputs), inputs=tuple(inputs), flags=flags)


def sidecar_for(state, request: Request) -> dict:
    artifact = state.artifact
    return {
        "graphfreeze_version": __version__,
        "target": state.target,
        "format": artifact.format,
        "file": storage.basename(artifact.path),
        "bytes": artifact.size,
        "sha256": artifact.sha256,
        "source": {"kind": state.model.kind, "path": request.source,
                   "graph": state.model.graph_file, **state.model.notes},
        "inputs": [t.as_json() for t in artifact.inputs],
        "outputs": [t.as_json() for t in artifact.outputs],
        "flags_folded": {k: v for k, v in sorted(state.flags.items())},
        **{k: state.notes[k] for k in sorted(state.notes)},
        **artifact.facts,
    }


def convert(request: Request, registry: Registry | None = None,
            on_stage: Callable[[str, str], None] = lambda target, stage: None) -> list[Written]:
    """Validate everything, refuse existing outputs, run all targets, write all files at once."""
    registry = registry or Registry.default()
    plans = plan.build(registry, list(request.targets), request.overrides,
                       skip=set() if request.verify else {"verify"})
    paths = output_paths(request, plans, source_stem(request))
    sidecars = {t: p + ".json" for t, p in paths.items()}
    for path in [*paths.values(), *sidecars.values()]:
        if path.rstrip("/") == request.source.rstrip("/"):
            raise OutputError(f"{path}: is the input model; choose another -o")
    model = load_source(request)
    memory.settle()
    initial = initial_state(request, model)
    storage.check_writable(list(paths.values()) + list(sidecars.values()), request.force)
    written = []
    with storage.Batch(request.force) as batch:
        states = plan.run(plans, dataclasses.replace(initial, batch=batch), paths, on_stage)
        for state in states:
            sidecar = sidecar_for(state, request)
            text = json.dumps(sidecar, indent=2, sort_keys=True) + "\n"
            batch.stage(sidecars[state.target], text.encode())
            written.append(Written(state.target, state.artifact.path, sidecars[state.target],
                                   sidecar))
        batch.commit()
    return written
