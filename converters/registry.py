"""The registry: stages, targets, graph passes, sources, formats and batch executors by name,
built-ins plus plugins.

Built-in formats are found by folder (`formats/<name>/`), each format's targets in its
`targets/*.toml`, a plugin format's in the `targets/` folder of the package its entry point
names. Plugins declare entry points in the groups `graphfreeze.stages` (a `Stage`, or a callable giving
one), `graphfreeze.passes` (a `GraphPass`, or a callable giving one), `graphfreeze.sources` (a
`Source` instance or class), `graphfreeze.formats` (a `Format`, or a callable giving one: its
export stage is registered with it), `graphfreeze.executors` (an `Executor` class) and
`graphfreeze.targets` (a dict shaped like a target TOML file, a path to one, or a callable giving
either). An entry point is loaded only when it is used.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import importlib.util
import pkgutil
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from graphfreeze.errors import ConfigError
from graphfreeze.io import tomlread as tomllib
from graphfreeze.plugins import BUILTIN, Format, GraphPass, Source, Stage, Target
from graphfreeze.registry_entries import checked, loaded, parse_target, provider_of

# where jobs run: imported only when chosen, as plugin executors' entry points are
BUILTIN_EXECUTORS = {"local": "graphfreeze.batch.executors.local:LocalExecutor",
                     "ray": "graphfreeze.batch.executors.ray_executor:RayExecutor"}
GROUPS = {"stage": "graphfreeze.stages", "target": "graphfreeze.targets",
          "pass": "graphfreeze.passes", "source": "graphfreeze.sources",
          "format": "graphfreeze.formats", "executor": "graphfreeze.executors"}


def _is_entry_point(value) -> bool:
    """An entry point not loaded yet: importlib.metadata's, or the importlib_metadata backport's
    (what the standard one hands out once a package has imported the backport: pygal does)."""
    return isinstance(value, metadata.EntryPoint) or (
        type(value).__name__ == "EntryPoint" and callable(getattr(value, "load", None)))


class Registry:
    """Names to stages, targets, passes and sources, each with the package that provides it."""

    def __init__(self) -> None:
        self._tables: dict[str, dict[str, tuple[str, Any]]] = {kind: {} for kind in GROUPS}
        self._pending: dict[str, list] = {kind: [] for kind in GROUPS}  # loaders not yet run
        self._loading: set[str] = set()
        self._homes: dict[tuple[str, str], str] = {}  # (kind, target/stage) -> its format
        self._entry_points = None  # every installed package's, read once (a scan of them all)

    @classmethod
    def default(cls, plugins: bool = True) -> Registry:
        """Built-ins (and plugins' entry points), each kind read when first asked for: listing
        targets reads their TOMLs and imports no format; scanning imports the sources only."""
        registry = cls()
        for kind in GROUPS:
            registry._pending[kind].append(getattr(registry, f"_builtin_{kind}"))
            if plugins:
                registry._pending[kind].append(functools.partial(registry._plugins, kind))
        return registry

    def _builtin_stage(self) -> None:
        from graphfreeze.stages import builtin_stages

        for stage in builtin_stages():
            self.add_stage(stage)

    def _builtin_format(self) -> None:
        """Each format folder by name; imported (and its stages registered) when first used."""
        for name in _builtin_format_names():
            self.add("format", name, _Builtin(f"graphfreeze.formats.{name}", "FORMAT"))

    def _builtin_target(self) -> None:
        for name in _builtin_format_names():
            self.add_targets(f"graphfreeze.formats.{name}", home=name)

    def _builtin_executor(self) -> None:
        for name, ref in BUILTIN_EXECUTORS.items():  # imported when chosen
            self.add("executor", name, metadata.EntryPoint(name, ref, GROUPS["executor"]))

    def _builtin_pass(self) -> None:
        from graphfreeze.graph.passes.builtin import builtin_passes

        for graph_pass in builtin_passes():
            self.add("pass", graph_pass.name, graph_pass)

    def _builtin_source(self) -> None:
        from graphfreeze.sources import builtin_sources

        for source in builtin_sources():
            self.add("source", source.name, source)

    def _plugins(self, kind: str) -> None:
        """`kind`'s entry points (a plugin format's targets too), loaded when used."""
        if self._entry_points is None:
            self._entry_points = metadata.entry_points()
        for ep in self._entry_points.select(group=GROUPS[kind]):
            self.add(kind, ep.name, ep, provider_of(ep))
        if kind == "target":
            for ep in self._entry_points.select(group=GROUPS["format"]):
                self.add_targets(ep.module, provider_of(ep), ep.name)

    def _table(self, kind: str) -> dict[str, tuple[str, Any]]:
        """The `kind` table, its built-ins and plugins read first if they are not yet."""
        pending = self._pending[kind]
        if pending and kind not in self._loading:
            self._loading.add(kind)  # what the loaders add goes in as it comes, in their order
            try:
                while pending:
                    pending.pop(0)()
            finally:
                self._loading.discard(kind)
        return self._tables[kind]

    def add_targets(self, package: str, provider: str = BUILTIN, home: str = "") -> None:
        """The targets in `package`'s `targets/*.toml` (found without importing it); `home`:
        the format that package is, whose stages its targets use first."""
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        folders = [] if spec is None else list(spec.submodule_search_locations or []) or \
            ([str(Path(spec.origin).parent)] if spec.origin else [])
        for folder in folders:
            for path in sorted((Path(folder) / "targets").glob("*.toml")):
                where = f"{package.rsplit('.', 1)[-1]}/targets/{path.name}"
                target = parse_target(tomllib.loads(path.read_text()), where, provider)
                self.add_target(target)
                self._homes["target", target.name] = home

    def add(self, kind: str, name: str, value: Any, provider: str = BUILTIN) -> None:
        table = self._table(kind)
        if name in table:
            raise ConfigError(f"{kind} '{name}' is provided twice: by {table[name][0]} and by "
                              f"{provider}; uninstall one of them")
        table[name] = (provider, value)

    def add_stage(self, stage: Stage, provider: str = BUILTIN) -> None:
        self.add("stage", stage.name, stage, provider)

    def add_format(self, fmt: Format, provider: str = BUILTIN) -> None:
        """A format and its export stage."""
        self.add("format", fmt.name, fmt, provider)
        self._add_stages(fmt, provider)

    def _add_stages(self, fmt: Format, provider: str) -> None:
        for stage in (fmt.export, *fmt.stages):
            self.add_stage(stage, provider)
            self._homes["stage", stage.name] = fmt.name

    def add_target(self, target: Target) -> None:
        self.add("target", target.name, target, target.provider)

    def names(self, kind: str) -> list[str]:
        if kind == "stage":
            self.formats()  # plugin formats' export stages are registered as they load
        return sorted(self._table(kind))

    def target_names(self) -> list[str]:
        return self.names("target")

    def provider(self, kind: str, name: str) -> str:
        return self._table(kind)[name][0]

    def _get(self, kind: str, name: str):
        table = self._table(kind)
        if name not in table:
            known = ", ".join(self.names(kind))
            plural = "passes" if kind == "pass" else kind + "s"
            close = difflib.get_close_matches(str(name), self.names(kind), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(f"unknown {kind} '{name}'{hint} ({plural}: {known})")
        provider, value = table[name]
        if isinstance(value, _Builtin):  # named as its folder
            value = checked("format", getattr(importlib.import_module(value.module), value.attr),
                            name, f"{value.module}.{value.attr}", provider)
        elif _is_entry_point(value):
            what = f"{kind} '{name}' from {provider}"
            value = checked(kind, loaded(value, what), name, what, provider)
        else:
            return value
        table[name] = (provider, value)
        if kind == "format":
            self._add_stages(value, provider)
        return value

    def stage(self, name: str) -> Stage:
        """A stage by name; a format's stage is registered as its format loads: the formats
        of the targets that use it first, then every format."""
        if name in self._table("stage"):
            return self._get("stage", name)
        homes = {self._homes.get(("target", t), "") for t, (_, value) in self._table("target").items()
                 if isinstance(value, Target) and any(u.use == name for u in value.stages)}
        for home in sorted(homes - {""}):
            if name not in self._table("stage"):
                self.format(home)
        if name not in self._table("stage"):
            self.formats()
        return self._get("stage", name)

    def target(self, name: str) -> Target:
        """A target by name; `base:value` gives a target with a parameter (npu-qualcomm:SM8650)."""
        base, colon, value = name.partition(":")
        target = self._get("target", base if colon else name)
        if colon and not target.parameter:
            raise ConfigError(f"target '{base}' takes no parameter; drop ':{value}'")
        return target.given(value) if colon else target

    def graph_pass(self, name: str) -> GraphPass:
        return self._get("pass", name)

    def source(self, name: str) -> Source:
        return self._get("source", name)

    def format(self, name: str) -> Format:
        return self._get("format", name)

    def formats(self) -> list[Format]:
        return [self.format(n) for n in self.names("format")]

    def format_of(self, stage_name: str) -> Format | None:
        """The format whose export stage `stage_name` is, if any."""
        with contextlib.suppress(ConfigError):
            self.stage(stage_name)  # (its format loaded)
        home = self._homes.get(("stage", stage_name))
        fmt = self.format(home) if home else None
        return fmt if fmt is not None and fmt.export.name == stage_name else None

    def executor(self, name: str) -> type:
        return self._get("executor", name)

    def option_classes(self, kind: str) -> list[type]:
        """The options dataclasses of every stage (kind "stage") or source ("source")."""
        items = [self.stage(n) for n in self.names("stage")] if kind == "stage" else self.sources()
        return [item.options for item in items]

    def sources(self) -> list[Source]:
        """Every source, in detection order."""
        return sorted((self.source(n) for n in self.names("source")), key=lambda s: (s.order, s.name))


class _Builtin(NamedTuple):
    """A built-in format not imported yet: `module.attr`."""

    module: str
    attr: str


def _builtin_format_names() -> list[str]:
    """The format folders (`formats/<name>/`), found without importing them."""
    from graphfreeze import formats

    return sorted(info.name for info in pkgutil.iter_modules(formats.__path__) if info.ispkg)
