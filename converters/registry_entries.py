"""What a target TOML or a plugin's entry point gives, checked as the kind it is registered as
(the registry's part that reads declarations; `registry.Registry` keeps the names)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from graphfreeze.errors import ConfigError
from graphfreeze.io import tomlread as tomllib
from graphfreeze.plugins import BUILTIN, Format, GraphPass, Source, Stage, StageUse, Target

SCHEMA_VERSION = 1


def parse_target(data: dict, where: str, provider: str = BUILTIN) -> Target:
    """Validate the shape of a target declaration (stage names are resolved by the plan)."""
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(f"{where}: schema_version must be {SCHEMA_VERSION}, "
                          f"got {data.get('schema_version')!r}")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ConfigError(f"{where}: '{key}' must be a non-empty string")
    unknown = set(data) - {"schema_version", "name", "description", "stages", "parameter"}
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
    parameter = data.get("parameter")
    if parameter is not None and not any(parameter in u.options for u in uses):
        raise ConfigError(f"{where}: parameter '{parameter}' is an option of none of its stages")
    return Target(data["name"], data["description"], tuple(uses), provider, parameter)


def _made(cls: type):
    """A checker for an entry point's value: a `cls` instance named as registered, or a
    callable giving one."""

    def check(value, name: str, what: str):
        value = value() if callable(value) and not isinstance(value, cls) else value
        if not isinstance(value, cls) or value.name != name:
            raise ConfigError(f"{what}: the entry point must give a graphfreeze.plugins."
                              f"{cls.__name__} named '{name}'")
        return value

    return check


_stage, _pass, _format = _made(Stage), _made(GraphPass), _made(Format)


def checked(kind: str, value, name: str, what: str, provider: str):
    """An entry point's (or a built-in format's) loaded `value` as the `kind` it is registered
    as, under `name`; else a ConfigError naming `what`."""
    if kind == "target":
        return _target(value, name, what, provider)
    return {"stage": _stage, "pass": _pass, "source": _source, "format": _format,
            "executor": _executor}[kind](value, name, what)


def _source(value, name: str, what: str) -> Source:
    value = value() if isinstance(value, type) else value
    if not isinstance(value, Source) or value.name != name:
        raise ConfigError(f"{what}: the entry point must give a graphfreeze.plugins.Source "
                          f"named '{name}'")
    return value


def _executor(value, name: str, what: str) -> type:
    if not isinstance(value, type) or getattr(value, "name", None) != name:
        raise ConfigError(f"{what}: the entry point must give an executor class named '{name}'")
    return value


def _target(value, name: str, what: str, provider: str) -> Target:
    value = value() if callable(value) else value
    if isinstance(value, str | Path):
        value = tomllib.loads(Path(value).read_text())
    if not isinstance(value, dict):
        raise ConfigError(f"{what}: the entry point must give a dict or a path to a target "
                          "TOML file")
    target = parse_target(value, what, provider)
    if target.name != name:
        raise ConfigError(f"{what} declares name '{target.name}'")
    return target


def provider_of(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} ({ep.value})" if dist is not None else ep.value


def loaded(ep: metadata.EntryPoint, what: str):
    try:
        return ep.load()
    except Exception as err:
        raise ConfigError(f"{what}: cannot load entry point {ep.value} ({err})") from err
