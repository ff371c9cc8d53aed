"""The one entry point the CLI (and any Python caller) uses, in two steps:

    prepared = prepare(request)   # plan, source detected, output paths checked; no TensorFlow
    written = execute(prepared)   # load, run every target's stages, commit every file at once

`convert(request)` does both.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from graphfreeze import names, plan
from graphfreeze.errors import ConfigError, InputError, OutputError
from graphfreeze.graph import inputs as graph_inputs
from graphfreeze.io import outputs, storage
from graphfreeze.options import RunOptions, flag_of, parse_options, paths_of
from graphfreeze.plugins import Source
from graphfreeze.process import environment, import_check, memory
from graphfreeze.registry import Registry
from graphfreeze.sidecar import Sidecar
from graphfreeze.state import State


@dataclass(frozen=True)
class Request:
    """What the user asked for."""

    source: str  # path as given
    kind: str = "auto"  # a registered source's name, or detected from the files
    source_options: dict = field(default_factory=dict)  # e.g. {"step": 200, "tag": "serve"}
    unsafe: bool = False
    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    targets: tuple[str, ...] = ("android",)
    output: str | None = None
    force: bool = False
    verify: bool = True
    stage_options: dict = field(default_factory=dict)  # stage options, for every target
    target_options: dict = field(default_factory=dict)  # target -> its own stage options
    run_options: dict = field(default_factory=dict)  # RunOptions (--report), for the whole run
    flags: bool = False  # the options came from the command line: errors name the flags

    def __post_init__(self):
        for name in ("source", "output"):  # `~/models/x` from a manifest or a quoted flag
            object.__setattr__(self, name, storage.expand(getattr(self, name)))


def _expanded(request: Request, registry: Registry) -> Request:
    """`request` with its path options (declared `path=True`) expanded: those of the sources and
    of the stages of the targets named (no other format imported)."""
    from graphfreeze.io.paths import expand_paths

    stages = [registry.stage(use.use).options for name in {*request.targets, *request.target_options}
              for use in registry.target(name).stages]
    keys = paths_of(stages) | paths_of(registry.option_classes("source"))
    return dataclasses.replace(
        request, source_options=expand_paths(request.source_options, keys),
        stage_options=expand_paths(request.stage_options, keys),
        run_options=expand_paths(request.run_options, paths_of([RunOptions])),
        target_options={t: expand_paths(o, keys) for t, o in request.target_options.items()})


@dataclass(frozen=True)
class Prepared:
    """A request checked and planned: what `execute` runs."""

    request: Request
    registry: Registry
    source: Source
    source_options: object
    plans: list[plan.TargetPlan]
    paths: dict[str, str]  # target -> artifact path
    sidecars: dict[str, str]  # target -> sidecar path
    run: RunOptions = RunOptions()
    started: float = field(default_factory=time.monotonic, compare=False)  # --report's job time
    # --report's bytes from the run and what it wrote: the caller's (the CLI gives batch's
    # one-job report; convert sits below batch/)
    reporter: Callable[[Prepared, list[Written]], bytes] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Written:
    target: str
    path: str
    sidecar_path: str
    sidecar: Sidecar


def prepare(request: Request, registry: Registry | None = None) -> Prepared:
    """Everything checked before any model is opened: targets, stages and options, the source
    and its options, the output paths (refused if they exist without --force), the size."""
    from graphfreeze.sources.detect import source_for

    environment.set_up()  # (an option check may import TensorFlow)
    registry = registry or Registry.default()
    request = _expanded(request, registry)
    plans = plan.build(registry, list(request.targets), request.stage_options,
                       skip=set() if request.verify else {"verify"},
                       target_options=request.target_options, flags=request.flags)
    source, options = source_for(request.source, request.kind, request.source_options, registry,
                                 strict=request.flags)
    paths = outputs.output_paths(request.output, plans, source.stem(request.source, options))
    sidecars = {t: p + ".json" for t, p in paths.items()}
    spell = (lambda name: flag_of(RunOptions, name)) if request.flags else str
    run = parse_options(RunOptions, request.run_options, "freeze", spell)
    try:
        outputs.check(plans, paths, [*sidecars.values(), *outputs.beside(plans, paths)],
                      [request.source, *source.files(request.source, options),
                       *source.kept(request.source, options)], request.force,
                      "-o" if request.flags else "output",  # (a manifest's out_dir, the API's)
                      {run.report: spell("report")} if run.report else {})
    except OutputError:  # a wrong --outputs/--inputs name is said first: its fix before --force's
        if source.floor:  # (a graph read without TensorFlow)
            names.check_given(lambda: source.load(request.source, options, request.unsafe),
                              request.outputs, request.inputs)
        raise
    return plan.check_size(Prepared(request, registry, source, options, plans, paths, sidecars,
                                    run))


def initial_state(request: Request, model, memo: dict | None = None) -> State:
    from graphfreeze.graph.weights import held

    with held(getattr(model, "weights", None)):  # (a frozen graph's values, held as read)
        return _initial_state(request, model, memo)


def _initial_state(request: Request, model, memo: dict | None) -> State:
    where = model.graph_file
    wanted = list(request.outputs) or model.default_outputs or []
    if not getattr(model, "validated", True):  # (sources/base.LoadedModel) what the run reads
        from graphfreeze.graph.checks.validate import check_graph_def

        check_graph_def(model.graph_def, where, names.roots(model, wanted, list(request.inputs)))
    if not wanted:
        likely = names.likely_outputs(model.graph_def)
        listed = ", ".join(likely) if likely else "none found"
        raise InputError(f"no --outputs given for {where}; likely outputs: {listed}")
    keras = model.notes.get("keras")  # how Keras named the layers' ops, if it made the graph
    cuttable = not getattr(model, "interface", False)
    if cuttable:  # the features a parse op or an iterator gives: inputs by their keys
        model.graph_def = graph_inputs.features_as_nodes(model.graph_def)
    outputs = names.resolve(model.graph_def, wanted, "output", where, keras)
    given = names.resolve(model.graph_def, list(request.inputs), "input", where, keras)
    if cuttable:  # an input that is one output of several gets a node of its own
        model.graph_def, given = graph_inputs.split_inputs(model.graph_def, given)
    from graphfreeze.graph.graphdefs import extract, reachable

    needed = reachable(model.graph_def, [o.node for o in outputs], [i.node for i in given])
    if not given and not request.outputs and model.default_inputs:
        # the model's own inputs (as named), those its own outputs use
        own = names.resolve(model.graph_def, model.default_inputs, "input", where, keras)
        given = [ref for ref in own if ref.node in needed]
    flags = names.flag_nodes(model.graph_def, needed, {i.node for i in given})
    names.check_fed(model.graph_def, needed, given if request.inputs else (), flags,
                    f"outputs {', '.join(wanted)} in {where}")
    inputs = given or names.default_inputs(model.graph_def, outputs, set(flags))
    if cuttable and not given:  # (an iterator's output no feature key names)
        model.graph_def, inputs = graph_inputs.split_inputs(model.graph_def, inputs)
    notes = {}
    keep = [t.node for t in (*outputs, *inputs)]
    if not getattr(model, "interface", False):  # the run's graph from here: what it can need
        table = model.notes.get("table_init")
        model.graph_def = extract(model.graph_def, keep + ([table] if table else []))
    if not request.unsafe:  # before anything runs: nothing the graph does may touch the host
        from graphfreeze.graph.checks.safety import check_graph

        model.graph_def, warnings = check_graph(model.graph_def, keep, where)
        notes = {"warnings": warnings} if warnings else {}
    from graphfreeze.graph.checks.validate_values import check_import, checked_here
    from graphfreeze.graph.skeleton import skeleton

    memo = {} if memo is None else memo
    if getattr(model, "interface", False):  # its graph is its signature: the files are read
        return _interface_state(model, outputs, inputs, notes, memo)
    needed = extract(model.graph_def, keep)  # what the run needs imports cleanly: checked here
    if checked_here(needed, where):  # or said at once by the child, else at commit
        import_check.passed(memo)
    else:
        import_check.submit(memo, check_import, skeleton(needed), where)
    return State(model=model, outputs=tuple(outputs), inputs=tuple(inputs), flags=flags,
                 notes=notes, memo=memo)


def _interface_state(model, outputs, inputs, notes: dict, memo: dict) -> State:
    """The state a stage that reads the files itself starts from (`Source.interface`): the
    interface as its graph, its inputs and outputs as the files say, nothing to import."""
    from graphfreeze.tensors import known_infos

    import_check.passed(memo)
    state = State(model=model, outputs=tuple(outputs), inputs=tuple(inputs), flags={},
                  graph_def=model.graph_def, notes=notes, memo=memo)
    known_infos(state, *model.infos())
    return state


def _floor(plans: list[plan.TargetPlan]) -> bool:
    """Whether every step of the run can run without TensorFlow here (a child runs the rest)."""
    return all(step.stage.floor is not None and step.stage.floor(step.options)
               for p in plans for step in p.steps)


def execute(prepared: Prepared,
            on_stage: Callable[[str, str], None] = lambda target, stage: None,
            on_commit: Callable[[], None] | None = None) -> list[Written]:
    """Load the model, run every target, write all files at once (nothing if anything fails).
    `on_commit()` runs as the renames start (it may raise to write nothing); signals arriving
    during the renames are delivered once they are done (storage.Transaction.commit)."""
    from graphfreeze.process import tensorflow_child

    environment.set_up()  # (a plan prepared in another process: a batch worker's)
    if prepared.run.report and prepared.reporter is None:  # (before any work)
        raise ConfigError("report: give execute() a Prepared with a reporter, e.g. "
                          "dataclasses.replace(prepared, reporter=graphfreeze.batch.report.one_run)")
    request, memo = prepared.request, {}
    direct = _direct(prepared)
    interface = direct and prepared.source.interface(request.source, prepared.source_options,
                                                     request.unsafe)
    if (prepared.source.floor or interface and request.verify) and _floor(prepared.plans):
        tensorflow_child.start(memo, now=request.verify)  # (else when first needed)
    try:
        written = _read_directly(prepared, direct, interface, memo, on_stage, on_commit) \
            if interface else None
        if written is not None:
            return written
        if interface:  # the full route loads the model with TensorFlow here
            tensorflow_child.stop(memo)
            memo = {}
        model = _loaded(prepared)
        return _execute(prepared, model, prepared.plans, memo, on_stage, on_commit)
    finally:
        tensorflow_child.stop(memo)


def _loaded(prepared: Prepared):
    """The source loaded; a kind named (`--kind keras`) failing on another kind's files says so."""
    request = prepared.request
    try:
        return prepared.source.load(request.source, prepared.source_options, request.unsafe)
    except InputError as err:
        if request.kind == "auto":
            raise
        other = next((s.name for s in prepared.registry.sources() if s.name != request.kind
                      and s.detect(request.source)), None)
        if other is None:
            raise
        raise InputError(f"{err} (read as a {request.kind} model, as asked; the files are a "
                         f"{other} model: leave the kind out to have it detected)") from err


def _direct(prepared: Prepared) -> list[plan.TargetPlan] | None:
    """Each target's plan from its stage that `reads` the source's files itself, when every
    target has one, the run keeps the model's own inputs and outputs, no option given applies
    to a stage before it, and every step can run without TensorFlow here; else None."""
    from graphfreeze.options import option_names

    request, kind = prepared.request, prepared.source.name
    if request.inputs or request.outputs or not _floor(prepared.plans):
        return None
    plans = []
    for p in prepared.plans:
        at = next((i for i, step in enumerate(p.steps) if kind in step.stage.reads), None)
        given = {*request.stage_options, *request.target_options.get(p.target.name, {})}
        if at is None or any(option_names(s.stage.options) & given for s in p.steps[:at]):
            return None
        plans.append(plan.TargetPlan(p.target, p.steps[at:]))
    return plans


def _read_directly(prepared: Prepared, plans, model, memo: dict, on_stage, on_commit):
    """The run with the source's interface (`Source.interface`) in place of its graph; None when
    it fails in any way but the output's (the full route then runs, as it would have without
    this one, and says its own error if it has one)."""
    from graphfreeze.errors import ConfigError

    try:
        return _execute(prepared, model, plans, memo, on_stage, on_commit)
    except (OutputError, ConfigError):
        raise
    except Exception:  # noqa: BLE001 -- a refusal, a failed verification, a dead child
        return None


def _execute(prepared: Prepared, model, plans, memo: dict, on_stage, on_commit) -> list[Written]:
    request = prepared.request
    memory.settle()
    initial = initial_state(request, model, memo)
    written = []
    with storage.Transaction(request.force, on_commit) as txn:
        try:
            states = plan.run(plans, dataclasses.replace(initial, files=txn),
                              prepared.paths, on_stage)
        except Exception as err:
            import_check.raise_failed(memo, stage_failed=True)
            if hasattr(err, "named"):  # op_libraries.Untaken: said with the targets taking it
                err.named(prepared.registry)
            raise
        import_check.raise_failed(memo)
        for state in states:
            sidecar = Sidecar.of(state, request.source)
            text = json.dumps(sidecar.to_json(), indent=2, sort_keys=True) + "\n"
            txn.put(prepared.sidecars[state.target], text.encode())
            written.append(Written(state.target, state.artifact.path,
                                   prepared.sidecars[state.target], sidecar))
        if prepared.run.report and prepared.reporter:  # --report, written as the caller says
            txn.put(prepared.run.report, prepared.reporter(prepared, written),
                    flag_of(RunOptions, "report"))
        txn.commit()
    return written


def convert(request: Request, registry: Registry | None = None,
            on_stage: Callable[[str, str], None] = lambda target, stage: None) -> list[Written]:
    """Validate everything, refuse existing outputs, run all targets, write all files at once."""
    return execute(prepare(request, registry), on_stage)
