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


def source_for(path: str, kind: str, raw: dict, registry) -> tuple[Source, object]:
    """(source, its options) for `path`: `kind` named or "auto" (detected). Options other
    sources take are ignored (a batch manifest's defaults span kinds); options no source takes
    are a ConfigError."""
    source = detect(path, registry) if kind == "auto" else registry.source(kind)
    known = set().union(*(option_names(s.options) for s in registry.sources()))
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"source option {', '.join(unknown)} is not taken by any source kind "
                          f"(options: {', '.join(sorted(known))})")
    mine = {k: v for k, v in raw.items() if k in option_names(source.options) and v is not None}
    options = parse_options(source.options, mine, f"{source.name} source")
    return source, options

