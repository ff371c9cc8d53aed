"""Stage options: frozen dataclasses, parsed strictly from target data before any work."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from graphfreeze.errors import ConfigError


@dataclass(frozen=True)
class NoOptions:
    """For stages that take none."""


def parse_options(cls: type, raw: dict, where: str):
    """Build `cls` from a dict; unknown keys and ill-typed values raise ConfigError."""
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - fields)
    if unknown:
        known = ", ".join(sorted(fields)) or "none"
        raise ConfigError(f"{where}: unknown option {', '.join(unknown)} (options: {known})")
    values = {}
    for name, value in raw.items():
        want = hints[name]
        values[name] = _coerce(value, want, f"{where}: option {name}")
    try:
        return cls(**values)  # a dataclass may check its values together in __post_init__
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from err


def _coerce(value, want, where: str):
    origin = typing.get_origin(want)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = typing.get_args(want)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except ConfigError as err:
                errors.append(err)
        raise errors[0]
    if origin is tuple:
        (item,) = typing.get_args(want)[:1]
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        return tuple(_coerce(v, item, where) for v in value)
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if want is bool and not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    if want is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where} must be an integer, got {value!r}")
    if not isinstance(value, want):
        raise ConfigError(f"{where} must be {want.__name__}, got {value!r}")
    return value


def option_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}
