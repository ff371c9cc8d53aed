"""Command-line flags generated from the options declared once, as dataclass fields with
`graphfreeze.options.option(flag=...)`: stage options (`--tolerance`, `--opset`, ...), source
options (`--tag`, `--meta`, ...) and each source kind's path flag (`Source.flag`: `--ckpt`, ...).
Built-in stages and sources only: a plugin's options are set with `--source-option KEY=VALUE` or
in a manifest."""

from __future__ import annotations

import dataclasses
import typing
from functools import cache

import click


@dataclasses.dataclass(frozen=True)
class Flag:
    flag: str
    name: str  # the option's field name (the manifest key)
    kind: str  # "stage" or "source"
    type: object
    help: str
    metavar: str | None


@cache
def _registry():
    from graphfreeze.registry import Registry

    return Registry.default(plugins=False)


@cache
def declared(kind: str) -> tuple[Flag, ...]:
    """Every flag the built-in `kind` ("stage" or "source") options declare, once each."""
    from graphfreeze.errors import ConfigError
    from graphfreeze.options import meta

    found: dict[str, Flag] = {}
    for cls in _registry().option_classes(kind):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if not meta(f, "flag"):
                continue
            flag = Flag(meta(f, "flag"), f.name, kind, hints[f.name], meta(f, "help", ""),
                        meta(f, "metavar"))
            if flag.flag in found and found[flag.flag] != flag:
                raise ConfigError(f"{flag.flag} is declared twice, differently ({cls.__name__})")
            found[flag.flag] = flag
    return tuple(found.values())


def _click_option(flag: Flag):
    import types

    want = flag.type
    union = typing.get_origin(want) in (typing.Union, types.UnionType)
    kinds = [n for n in typing.get_args(want) if n is not type(None)] if union else [want]
    base = str if str in kinds else kinds[0]  # `float | str` (1/255, probs=1e-4): parsed later
    if base is bool:
        return click.option(flag.flag, flag.name, is_flag=True, default=None, help=flag.help)
    if typing.get_origin(base) is tuple:
        return click.option(flag.flag, flag.name, multiple=True, metavar=flag.metavar,
                            help=flag.help)
    return click.option(flag.flag, flag.name, type=base, default=None, metavar=flag.metavar,
                        help=flag.help)


def options(kind: str):
    """A decorator adding the flags of `kind` ("stage" or "source") options."""

    def add(func):
        for flag in reversed(declared(kind)):
            func = _click_option(flag)(func)
        return func

    return add


def sources() -> list:
    return _registry().sources()


def kind_flags(func):
    """`--ckpt PATH`, `--saved-model DIR`, ...: one per source kind that declares a flag."""
    for source in reversed(sources()):
        if source.flag:
            func = click.option(source.flag, "kind_" + source.name, metavar="PATH",
                                help=source.summary + ".")(func)
    return func


def kinds_given(values: dict) -> list[tuple[str, str]]:
    """(kind, path) for each source kind flag given."""
    return [(k[len("kind_"):], v) for k, v in values.items() if k.startswith("kind_") and v]


def given(kind: str, values: dict) -> dict:
    """The `kind` options set on the command line: {field name: value}."""
    out = {}
    for flag in declared(kind):
        value = values.get(flag.name)
        if value is None or value is False or value == ():
            continue
        out[flag.name] = tuple(value) if isinstance(value, list | tuple) else value
    return out
