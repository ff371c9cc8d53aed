"""The stage and target registry: built-ins plus plugins from entry points.

Stages and targets are registered by name in one Registry object that is passed around. Plugins
declare entry points in the groups `graphfreeze.stages` (an object that is a `Stage`, or a
callable returning one) and `graphfreeze.targets` (a dict shaped like a target TOML file, a path
to one, or a callable returning either). An entry point is loaded only when it is used.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from graphfreeze.errors import ConfigError
from graphfreeze.options import NoOptions

STAGE_GROUP = "graphfreeze.stages"
TARGET_GROUP = "graphfreeze.targets"
SCHEMA_VERSION = 1
BUILTIN = "graphfreeze"


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


def parse_target(data: dict, where: str, provider: str = BUILTIN) -> Target:
    """Validate the shape of a target declaration (stage names are resolved by the plan)."""
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(f"{where}: schema_version must be {SCHEMA_VERSION}, "
                          f"got {data.get('schema_version')!r}")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ConfigError(f"{where}: '{key}' must be a non-empty string")
    unknown = set(data) - {"schema_version", "name", "description", "stages"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(sorted(unknown))}")
    stages = data.get("stages")
    if not isinstance(stages, list) or not stages:
        raise ConfigError(f"{where}: 'stages' must be a non-empty list of {{ use = \"name\" }}")
    uses = []
    for i, entry in enumerate(stages):
        if not isinstance(entry, dict) or not isinstance(entry.get("use"), str):
            raise ConfigError(f"{where}: stages[{i}] needs use = \"stage_name\"")
        uses.append(StageUse(entry["use"], {k: v for k, v in entry.items() if k != "use"}))
    return Target(data["name"], data["description"], tuple(uses), provider)


class Registry:
    """Names to stages and targets, each with the package that provides it."""

    def __init__(self) -> None:
        self._stages: dict[str, tuple[str, Any]] = {}
        self._targets: dict[str, tuple[str, Any]] = {}

    @classmethod
    def default(cls, plugins: bool = True) -> Registry:
        from graphfreeze.stages import builtin_stages

        registry = cls()
        for stage in builtin_stages():
            registry.add_stage(stage)
        for path in sorted(resources.files("graphfreeze.targets").iterdir(), key=lambda p: p.name):
            if path.name.endswith(".toml"):
                target = parse_target(tomllib.loads(path.read_text()), f"targets/{path.name}")
                registry.add_target(target)
        if plugins:
            for ep in metadata.entry_points(group=STAGE_GROUP):
                registry._add(registry._stages, "stage", ep.name, _provider(ep), ep)
            for ep in metadata.entry_points(group=TARGET_GROUP):
                registry._add(registry._targets, "target", ep.name, _provider(ep), ep)
        return registry

    def add_stage(self, stage: Stage, provider: str = BUILTIN) -> None:
        self._add(self._stages, "stage", stage.name, provider, stage)

    def add_target(self, target: Target) -> None:
        self._add(self._targets, "target", target.name, target.provider, target)

    @staticmethod
    def _add(table: dict, kind: str, name: str, provider: str, value: Any) -> None:
        if name in table:
            raise ConfigError(f"{kind} '{name}' is provided twice: by {table[name][0]} and by "
                              f"{provider}; uninstall one of them")
        table[name] = (provider, value)

    def stage_names(self) -> list[str]:
        return sorted(self._stages)

    def target_names(self) -> list[str]:
        return sorted(self._targets)

    def provider(self, kind: str, name: str) -> str:
        return (self._stages if kind == "stage" else self._targets)[name][0]

    def stage(self, name: str) -> Stage:
        if name not in self._stages:
            raise ConfigError(f"unknown stage '{name}' (stages: {', '.join(self.stage_names())})")
        provider, value = self._stages[name]
        if isinstance(value, metadata.EntryPoint):
            value = _load(value, f"stage '{name}' from {provider}")
            value = value() if callable(value) and not isinstance(value, Stage) else value
            if not isinstance(value, Stage) or value.name != name:
                raise ConfigError(f"stage '{name}' from {provider}: the entry point must give a "
                                  f"graphfreeze.registry.Stage named '{name}'")
            self._stages[name] = (provider, value)
        return value

    def target(self, name: str) -> Target:
        if name not in self._targets:
            raise ConfigError(f"unknown target '{name}' "
                              f"(targets: {', '.join(self.target_names())})")
        provider, value = self._targets[name]
        if isinstance(value, metadata.EntryPoint):
            value = _load(value, f"target '{name}' from {provider}")
            value = value() if callable(value) else value
            if isinstance(value, str | Path):
                value = tomllib.loads(Path(value).read_text())
            if not isinstance(value, dict):
                raise ConfigError(f"target '{name}' from {provider}: the entry point must give a "
                                  "dict or a path to a target TOML file")
            value = parse_target(value, f"target '{name}' from {provider}", provider)
            if value.name != name:
                raise ConfigError(f"target '{name}' from {provider} declares name '{value.name}'")
            self._targets[name] = (provider, value)
        return value


def _provider(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} ({ep.value})" if dist is not None else ep.value


def _load(ep: metadata.EntryPoint, what: str):
    try:
        return ep.load()
    except Exception as err:
        raise ConfigError(f"{what}: cannot load entry point {ep.value} ({err})") from err
