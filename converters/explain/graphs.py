"""Which formats Model Explorer draws, as each format says (`Format.explorer`: its folder's
`explorer.py`: the adapter that reads the file running nothing, and the keys its node data
matches); nothing here names a format."""

from __future__ import annotations


def drawn(registry) -> dict:
    """{format name: its Explorer} for every format Model Explorer draws (one that does not
    load is left out: its own runs say why)."""
    import contextlib

    from graphfreeze.errors import ConfigError

    found = {}
    for name in registry.names("format"):
        with contextlib.suppress(ConfigError, ImportError):
            explorer = registry.format(name).explorer
            if explorer is not None:
                found[name] = explorer
    return found


def reads(registry) -> str:
    """What Model Explorer reads, in words ("a, b and c")."""
    words = [explorer.reads for explorer in drawn(registry).values()]
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def recognized(path: str, registry) -> str | None:
    """The format Model Explorer would read `path` as, without a sidecar to say, or None."""
    return next((name for name, e in drawn(registry).items() if e.recognizes(path)), None)


def cannot_draw(fmt: str, registry) -> str:
    """Why --explain draws no `fmt` artifact, in words."""
    return f"Model Explorer cannot draw {fmt} artifacts (it reads {reads(registry)})"


def node_keys(artifact, nodes: list[str]) -> dict[str, str]:
    """{TensorFlow node: its key in Model Explorer's graph of `artifact`} for `nodes` (in graph
    order) that the artifact has; {} for a format Model Explorer does not draw."""
    explorer = artifact.format.explorer
    return explorer.keys(artifact.staged or artifact.path, nodes) if explorer else {}
