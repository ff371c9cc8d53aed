"""Which source a path is, and the typed options it gets: no per-kind branches here."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError
from graphfreeze.io import storage
from graphfreeze.options import option_names, parse_options
from graphfreeze.plugins import Source


def expected(registry) -> str:
    return "; ".join(s.summary for s in registry.sources())


def detect(path: str, registry) -> Source:
    """The first source (in detection order) that recognises the files at `path`."""
    for source in registry.sources():
        if source.detect(path):
            return source
    bare = path.rstrip("/") or path
    if not storage.exists(bare):
        raise InputError(f"{path}: no such file or directory; expected {expected(registry)}")
    if storage.isdir(bare):
        raise InputError(f"{path}: a directory holding no model; expected {expected(registry)}")
    raise InputError(f"{path}: not a model graphfreeze knows; expected {expected(registry)}")


def source_for(path: str, kind: str, raw: dict, registry, strict: bool = False,
               ) -> tuple[Source, object]:
    """(source, its options) for `path`: `kind` named or "auto" (detected). Options no source
    takes are a ConfigError; so are options other sources take if `strict` (flags a user gave
    for this model), else they are ignored (a batch manifest's defaults span kinds)."""
    source = detect(path, registry) if kind == "auto" else registry.source(kind)
    takers = {name: [s.name for s in registry.sources() if name in option_names(s.options)]
              for name in raw}
    unknown = sorted(name for name, kinds in takers.items() if not kinds)
    if unknown:
        known = set().union(*(option_names(s.options) for s in registry.sources()))
        raise ConfigError(f"source option {', '.join(unknown)} is not taken by any source kind "
                          f"(options: {', '.join(sorted(known))})")
    mine = {k: v for k, v in raw.items() if k in option_names(source.options) and v is not None}
    others = sorted(k for k, v in raw.items() if k not in mine and v is not None)
    if strict and others:
        name = others[0]
        raise ConfigError(f"{path}: --{name.replace('_', '-')} is an option of "
                          f"{' and '.join(takers[name])} models, and this one is a {source.name} "
                          "model; leave it out")
    options = parse_options(source.options, mine, f"{source.name} source")
    return source, options

