"""Command-line flags generated from the options declared once, as dataclass fields with
`graphfreeze.options.option(flag=...)`: stage options (`--tolerance`, `--opset`, ...), source
options (`--tag`, `--meta`, ...), run options (`--report`: `graphfreeze.options.RunOptions`) and
each source kind's path flag (`Source.flag`: `--ckpt`, ...).
Built-in sources only: a plugin source's options are set with `--source-option KEY=VALUE` or in
a manifest.

The CLI reads them from data files, importing nothing of graphfreeze's formats: flags.json here
(the shared stages', the sources', the run's) and each format's own `flags.json` in its folder
(its stages' flags: built-in folders, and a plugin format's package, found by its
`graphfreeze.formats` entry point in the installed packages' entry_points.txt, read as text):
`freeze --help` and `freeze scan` then import no format, no numpy. `python -m
graphfreeze_cli.flags` rewrites the built-ins' from the dataclasses (`derive()`, importing every
stage and format), `write_format` a plugin format's; tests/cli/test_flags.py fails while they
differ. Values are parsed by the options' own classes later
(graphfreeze.options.parse_options), as a manifest's are."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path

import click

INDEX = Path(__file__).with_name("flags.json")
TYPES = ("bool", "tuple", "int", "float", "str")  # how click takes a value


@dataclasses.dataclass(frozen=True)
class Flag:
    flag: str
    name: str  # the option's field name (the manifest key)
    kind: str  # "stage", "source" or "run"
    type: str  # one of TYPES
    help: str
    metavar: str | None
    stages: tuple[str, ...] = ()  # a stage flag: the stages whose options take it (--help's groups)


@dataclasses.dataclass(frozen=True)
class SourceFlag:
    """A source kind with a path flag (`--ckpt PATH`)."""

    name: str
    flag: str
    summary: str


@cache
def _index() -> dict:
    """flags.json with every format's stage flags merged in (a flag several stages declare
    alike lists them all)."""
    index = json.loads(INDEX.read_text())
    stage = {f["flag"]: f for f in index["stage"]}
    for folder in format_folders():
        try:
            flags = json.loads((folder / "flags.json").read_text())
        except (OSError, ValueError):
            continue
        for f in flags:
            known = stage.get(f["flag"])
            if known is None:
                stage[f["flag"]] = f
            elif _same(known, f):
                stage[f["flag"]] = {**known, "stages": sorted({*known["stages"], *f["stages"]})}
    return {**index, "stage": list(stage.values())}


def _same(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "stages"} == \
        {k: v for k, v in b.items() if k != "stages"}


def format_folders() -> list[Path]:
    """The built-in format folders, then each plugin format's package folder (its entry point
    read from the installed packages' entry_points.txt as text: importing nothing)."""
    import importlib.util

    builtin = Path(importlib.util.find_spec("graphfreeze").submodule_search_locations[0])
    folders = sorted(p for p in (builtin / "formats").iterdir() if (p / "__init__.py").exists())
    for module in _plugin_format_modules():
        try:
            spec = importlib.util.find_spec(module.split(".")[0])
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            folders.append(Path(spec.submodule_search_locations[0]).joinpath(
                *module.split(".")[1:]))
    return folders


def _plugin_format_modules() -> list[str]:
    """The modules named by `graphfreeze.formats` entry points on sys.path."""
    import os
    import sys

    found = []
    for where in sys.path:
        try:
            entries = list(os.scandir(where or "."))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            section = text.partition("[graphfreeze.formats]")[2].partition("\n[")[0]
            found += [line.partition("=")[2].strip().partition(":")[0]
                      for line in section.splitlines() if "=" in line]
    return found


def declared(kind: str) -> tuple[Flag, ...]:
    """Every flag the `kind` ("stage", "source" or "run") options declare, once each."""
    return tuple(Flag(kind=kind, **{**f, "stages": tuple(f.get("stages", ()))})
                 for f in _index()[kind])


def sources() -> list[SourceFlag]:
    """The built-in source kinds that have a path flag, in detection order."""
    return [SourceFlag(**s) for s in _index()["kinds"]]


def _click_option(flag: Flag):
    if flag.type == "bool":
        return click.option(flag.flag, flag.name, is_flag=True, default=None, help=flag.help)
    if flag.type == "tuple":
        return click.option(flag.flag, flag.name, multiple=True, metavar=flag.metavar,
                            help=flag.help)
    return click.option(flag.flag, flag.name, type={"int": int, "float": float, "str": str}[flag.type],
                        default=None, metavar=flag.metavar, help=flag.help)


def options(kind: str):
    """A decorator adding the flags of `kind` ("stage", "source" or "run") options."""

    def add(func):
        for flag in reversed(declared(kind)):
            func = _click_option(flag)(func)
        return func

    return add


def kind_flags(func):
    """`--ckpt PATH`, `--saved-model DIR`, ...: one per source kind that declares a flag."""
    for source in reversed(sources()):
        func = click.option(source.flag, "kind_" + source.name, metavar="PATH",
                            help=source.summary + ".")(func)
    return func


def name_flags(func):
    """`--outputs NAMES` and `--inputs NAMES`: the tensors a command cuts the graph at."""
    func = click.option("--inputs", "inputs", multiple=True, metavar="NAMES",
                        help="Input names (default: the placeholders the outputs need).")(func)
    return click.option("--outputs", "outputs", multiple=True, metavar="NAMES",
                        help="Output node or tensor names, comma-separated (probs or "
                             "probs:0).")(func)


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


def derive() -> dict:
    """flags.json's content, from the built-in stages' and sources' option dataclasses: the
    stages no format brings (a format's are in its folder's flags.json: `derive_format`)."""
    from graphfreeze.options import RunOptions
    from graphfreeze.registry import Registry

    registry = Registry.default(plugins=False)
    theirs = {s.name for fmt in registry.formats() for s in (fmt.export, *fmt.stages)}
    return {"stage": _derive([(n, registry.stage(n).options) for n in registry.names("stage")
                              if n not in theirs]),
            "source": _derive([("", cls) for cls in registry.option_classes("source")]),
            "run": _derive([("", RunOptions)]),
            "kinds": [{"name": s.name, "flag": s.flag, "summary": s.summary}
                      for s in registry.sources() if s.flag]}


def derive_format(fmt) -> list[dict]:
    """A format's flags.json: its stages' flags."""
    return _derive([(s.name, s.options) for s in (fmt.export, *fmt.stages)])


def _derive(owners: list[tuple[str, type]]) -> list[dict]:
    """The flags `owners` ((stage name or "", options class)) declare, once each."""
    import typing

    from graphfreeze.errors import ConfigError
    from graphfreeze.options import meta

    found: dict[str, dict] = {}
    for owner, cls in owners:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if not meta(f, "flag"):
                continue
            flag = {"flag": meta(f, "flag"), "name": f.name, "type": _type_name(hints[f.name]),
                    "help": meta(f, "help", ""), "metavar": meta(f, "metavar")}
            known = found.get(flag["flag"])
            if known is not None and not _same(known, flag):
                raise ConfigError(f"{flag['flag']} is declared twice, differently ({cls.__name__})")
            found.setdefault(flag["flag"], {**flag, **({"stages": []} if owner else {})})
            if owner:
                found[flag["flag"]]["stages"].append(owner)
    return list(found.values())


def _type_name(want) -> str:
    """How click takes a value of type `want` (`float | str`: a string, parsed later)."""
    import types
    import typing

    union = typing.get_origin(want) in (typing.Union, types.UnionType)
    kinds = [n for n in typing.get_args(want) if n is not type(None)] if union else [want]
    base = str if str in kinds else kinds[0]
    name = "tuple" if typing.get_origin(base) is tuple else getattr(base, "__name__", str(base))
    if name not in TYPES:
        raise TypeError(f"a flag's option of type {want} (the CLI takes {', '.join(TYPES)})")
    return name


def write() -> list[Path]:
    """Rewrite flags.json and each built-in format folder's from the dataclasses; the files
    that changed."""
    from graphfreeze.registry import Registry

    registry = Registry.default(plugins=False)
    files = {INDEX: derive(), **{Path(_folder(fmt)) / "flags.json": derive_format(fmt)
                                 for fmt in registry.formats()}}
    return [path for path, data in files.items() if _write(path, data)]



def write_format(fmt, folder: str | None = None) -> bool:
    """Write format `fmt`'s flags.json in its folder (a plugin's package); True if it changed."""
    return _write(Path(folder or _folder(fmt)) / "flags.json", derive_format(fmt))


def _folder(fmt) -> str:
    import importlib

    return str(Path(importlib.import_module(fmt.package).__file__).parent)


def _write(path: Path, data) -> bool:
    """`data` as `path` (a format with no flags: no file)."""
    text = json.dumps(data, indent=1) + "\n"
    if not data and not path.exists() or path.exists() and path.read_text() == text:
        return False
    if data:
        path.write_text(text)
    else:
        path.unlink()
    return True


def _group(param) -> str:
    """The --help section of one of `convert`'s options."""
    name = param.name or ""
    stages = next((f.stages for f in declared("stage") if f.name == name), None)
    if stages is not None:
        return "Verification" if "verify" in stages else \
            "Benchmark" if stages == ("benchmark",) else "Conversion (targets that take them)"
    if name in ("outputs", "inputs"):
        return "Names"
    if name in ("targets", "output", "report", "force"):
        return "Targets and files"
    if name == "no_verify":
        return "Verification"
    if name == "debug":
        return "Other"
    return "Model"


class GroupedOptions(click.Command):
    """A command whose --help lists its options in groups (`_group`), in that order."""

    ORDER = ("Model", "Names", "Targets and files", "Verification",
             "Conversion (targets that take them)", "Benchmark", "Other")

    def format_options(self, ctx, formatter):
        groups: dict[str, list] = {}
        helps = self.get_help_option(ctx)
        for param in self.get_params(ctx):
            record = None if isinstance(param, click.Argument) else param.get_help_record(ctx)
            if record is not None:
                groups.setdefault("Other" if param is helps else _group(param), []).append(record)
        for title in self.ORDER:
            if groups.get(title):
                with formatter.section(f"{title} options"):
                    formatter.write_dl(groups[title])

if __name__ == "__main__":
    print("\n".join(f"{path}: rewritten" for path in write()) or "flags: up to date")
