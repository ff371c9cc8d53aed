"""Validate a run's whole plan before any work, then run it, sharing common stage prefixes."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphfreeze.errors import ConfigError, install_hint
from graphfreeze.options import applies, flag_of, option_names, parse_options
from graphfreeze.plugins import Stage, Target
from graphfreeze.process import memory
from graphfreeze.registry import Registry

FIRST_KIND = "model"
# the weights a stage holds beyond which the next stage's `prepare` does not start beside it
# (verify's reference run would hold them a second time at once): it runs after, in its turn
OVERLAP_BYTES = 1 << 30


@dataclass(frozen=True)
class Step:
    stage: Stage
    options: Any


@dataclass(frozen=True)
class TargetPlan:
    target: Target
    steps: tuple[Step, ...]

    @property
    def suffix(self) -> str:
        return self._export.suffix

    @property
    def folder(self) -> bool:
        """The artifact is a folder, not a file."""
        return self._export.folder

    @property
    def _export(self):
        return next(s.stage for s in self.steps if s.stage.suffix)


def build(registry: Registry, target_names: list[str], stage_options: dict | None = None,
          skip: set[str] = frozenset(), target_options: dict | None = None,
          flags: bool = False) -> list[TargetPlan]:
    """Resolve targets and stages, parse options (plus `stage_options` where a stage has that
    option, and `target_options[target]` for that target's stages), drop stages named in
    `skip` (or of its kind: `verify` drops `verify_generation` too), and check each stage gets
    the kind it consumes. `flags`: the stage_options came from the command line, so errors name
    them as flags."""
    stage_options, target_options = stage_options or {}, target_options or {}
    if len(set(target_names)) != len(target_names):
        raise ConfigError(f"target given twice in {', '.join(target_names)}")
    for name in target_options:
        registry.target(name)  # a misspelled target: unknown, with did-you-mean
    used_options: set[str] = set()
    plans = []
    for name in target_names:
        target = registry.target(name)
        own, used_own = target_options.get(name, {}), set()
        steps, kind = [], FIRST_KIND
        for use in target.stages:
            if use.use in skip or use.use.split("_")[0] in skip:
                continue
            stage = registry.stage(use.use)
            where = f"target '{name}', stage '{use.use}'"
            names = option_names(stage.options)
            extra = {k: v for k, v in stage_options.items() if k in names}
            mine = {k: v for k, v in own.items() if k in names}

            def spell(option: str, cls=stage.options, extra=extra, mine=mine) -> str:
                return flag_of(cls, option) if flags and option in extra and option not in mine \
                    else option

            options = parse_options(stage.options, {**use.options, **extra, **mine}, where, spell)
            used_options |= {k for k in extra if applies(options, k)}
            used_own |= {k for k in mine if applies(options, k)}
            if hasattr(options, "passes"):  # graph passes, by name: resolved here, once
                try:
                    passes = tuple(registry.graph_pass(n) for n in options.passes)
                except ConfigError as err:
                    raise ConfigError(f"{where}: {err}") from err
                options = dataclasses.replace(options, passes=passes)
            fmt = registry.format_of(use.use)
            missing = fmt.missing() if fmt else []
            if missing:
                raise ConfigError(f"target '{name}': the {fmt.name} format needs {', '.join(missing)}"
                                  f", not installed; {install_hint(fmt.extra)}")
            if stage.consumes != kind:
                raise ConfigError(f"{where}: consumes a {stage.consumes} but gets a {kind}; "
                                  "reorder the target's stages")
            kind = stage.produces
            steps.append(Step(stage, options))
        if set(own) - used_own:
            raise ConfigError(f"option {', '.join(sorted(set(own) - used_own))} applies to no "
                              f"stage of target '{name}'")
        if not any(s.stage.suffix for s in steps):
            raise ConfigError(f"target '{name}' has no stage that writes a file")
        plans.append(TargetPlan(target, tuple(steps)))
    unused = set(stage_options) - used_options
    if unused:
        shown = sorted("--" + u.replace("_", "-") if flags else u for u in unused)
        raise ConfigError(f"option {', '.join(shown)} applies to no stage of "
                          f"{', '.join(target_names)}")
    return plans


def check_size(prepared):
    """`prepared` (convert.Prepared) once the weights its outputs need (`Source.weight_bytes`)
    fit what each target takes (`weights_cap`); else one ConfigError, before any work: their
    size, the limits, and the targets that take them."""
    request, registry = prepared.request, prepared.registry
    limits = {p.target.name: cap for p in prepared.plans
              if (cap := weights_cap(registry, p.target, p.steps))}
    size = limits and request.outputs and prepared.source.weight_bytes(
        request.source, prepared.source_options, request.outputs, request.inputs)
    over: dict[tuple, list[str]] = {}
    for name, cap in limits.items():
        if size and size > cap[0]:
            over.setdefault(cap, []).append(name)
    if not over:
        return prepared
    holders = [t for t in registry.target_names()
               if _format(registry, target := registry.target(t)) is not None and
               ((cap := weights_cap(registry, target)) is None or cap[0] >= size)]
    said = " and ".join(f"the {limit / 2**30:.3g} GiB target{'s' if len(names) > 1 else ''} "
                        f"{', '.join(names)} can {verb}"
                        for (limit, verb), names in sorted(over.items(), reverse=True))
    flag = "--outputs " if request.flags else "outputs "
    raise ConfigError(f"{request.source}: the weights {flag}{','.join(request.outputs)} need are "
                      f"{size / 2**30:.2f} GiB, over {said}; targets that can: "
                      f"{', '.join(holders) or 'none'}")


def weights_cap(registry: Registry, target: Target, steps: tuple[Step, ...] | None = None):
    """(bytes, "write" | "quantize"): the most weight bytes `target` (its planned `steps`, else
    its own) takes, or None: its format's `max_bytes`, and an export's that quantizes (its
    quantizer holds the model whole, graph/stand_ins.kept_apart) `apart_bytes`."""
    fmt = _format(registry, target)
    found = [(fmt.max_bytes, "write")] if fmt is not None and fmt.max_bytes is not None else []
    if steps is None:
        with contextlib.suppress(ConfigError):
            steps = build(registry, [target.name])[0].steps
    found += [(step.options.apart_bytes, "quantize") for step in steps or ()
              if getattr(step.options, "quantize", "none") != "none" and
              hasattr(step.options, "apart_bytes")]
    return min(found) if found else None


def _format(registry: Registry, target: Target):
    """The format of `target`'s export stage (None: a plugin's stage that none declares)."""
    for use in target.stages:
        with contextlib.suppress(ConfigError):
            fmt = registry.format_of(use.use)
            if fmt is not None:
                return fmt
    return None


def run(plans: list[TargetPlan], initial, paths: dict[str, str],
        on_stage: Callable[[str, str], None] = lambda target, stage: None) -> list:
    """Run each target's stages from `initial`; identical leading steps run once.

    Only states a later target starts from are kept, so a single target holds one graph at a
    time, and the model lets its own graph go after the last step that reads it.
    """
    from graphfreeze.graph.weights import held
    from graphfreeze.sources.base import release

    keys = [_keys(plan, paths[plan.target.name]) for plan in plans]
    shared = {k for i, ks in enumerate(keys) for k in ks for later in keys[i + 1:] if k in later}
    last_read = _last_source_read(plans, keys)
    done: dict[tuple, Any] = {}
    results = []
    for plan, plan_keys in zip(plans, keys, strict=True):
        state = initial
        for i, (step, key) in enumerate(zip(plan.steps, plan_keys, strict=True)):
            if key in done:
                state = done[key]
                continue
            on_stage(plan.target.name, step.stage.name)
            state = dataclasses.replace(state, target=plan.target.name,
                                        output_path=paths[plan.target.name],
                                        release_source=key == last_read)
            after = plan.steps[i + 1] if i + 1 < len(plan.steps) else None
            if state.weights is not None and not (step.stage.weights_apart and (
                    after is None or after.stage.prepare is None or after.stage.weights_apart)):
                state = _attached(state)
            with held(state.weights):  # consts.node_value reads them
                if after is not None and after.stage.prepare is not None and \
                        _weight_bytes(state) <= OVERLAP_BYTES:
                    after.stage.prepare(state, after.options)
                state = step.stage.run(state, step.options)
            if key == last_read:
                release(initial.model)
            memory.release()
            if key in shared:
                done[key] = state
                if state.weights is not None:
                    state.weights.shared = True
        results.append(state)
    return results


def _weight_bytes(state) -> int:
    """The bytes of the weights a state's graph holds (apart or in it), by their shapes."""
    if state.weights is not None:
        return sum(a.nbytes for a in state.weights.arrays.values())
    from graphfreeze.graph.serialize import const_bytes

    return const_bytes(state.graph_def, limit=1 << 62) if state.graph_def is not None else 0


def _attached(state):
    """`state` with its held weights put back into its graph (graph/weights.py)."""
    from graphfreeze.graph.weights import attach

    attach(state.graph_def, state.weights)
    return dataclasses.replace(state, weights=None)


def _last_source_read(plans: list[TargetPlan], keys: list[list[tuple]]) -> tuple | None:
    """The key of the last step the run runs whose stage reads the model's own graph
    (`Stage.source_graph`); a later target's steps an earlier one ran are not run again."""
    last = None
    for p, (plan, plan_keys) in enumerate(zip(plans, keys, strict=True)):
        for step, key in zip(plan.steps, plan_keys, strict=True):
            if step.stage.source_graph and not any(key in earlier for earlier in keys[:p]):
                last = key
    return last


def _keys(plan: TargetPlan, path: str) -> list[tuple]:
    """Identity of each step's result: the steps so far, and the path once a file is made."""
    keys, key, writes = [], (), False
    for step in plan.steps:
        writes = writes or step.stage.suffix is not None
        key += ((step.stage.name, step.options, path if writes else None),)
        keys.append(key)
    return keys
