"""The batch manifest (`models.toml`): validated whole, before any model is opened.

    schema_version = 1
    [defaults]                    # any job option, spelled as the long flag with _ for -
    targets = ["android"]
    out_dir = "dist"              # each model's artifacts go to {out_dir}/{name}/
    [[model]]
    name = "iris"                 # optional: derived from the source path, unique
    source = "runs/iris"          # any PATH `freeze` takes; relative to the manifest's folder
    outputs = ["probs"]
    [[model]]
    source = "exports/*/saved_model"   # a glob: one job per match

Every mistake is a ConfigError naming `models.toml:LINE` and the fix (exit 6).
"""

from __future__ import annotations

import dataclasses
import difflib
import glob as globlib
import os
import re
import tomllib
from dataclasses import dataclass

from graphfreeze import storage
from graphfreeze.errors import ConfigError, GraphFreezeError
from graphfreeze.names import parse_names
from graphfreeze.options import option_names, parse_options
from graphfreeze.paths import gfile

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class JobOptions:
    """Every option `freeze` takes, per model or in [defaults]."""

    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    targets: tuple[str, ...] = ("android",)
    kind: str = "auto"
    tag: str | None = None
    signature: str | None = None
    step: int | None = None
    meta: str | None = None
    custom_objects: tuple[str, ...] = ()
    source_options: dict | None = None  # options of plugin sources
    opset: int | None = None
    tolerance: float | None = None
    calibration: str | None = None
    allow_tf_ops: bool = False
    as_text: bool = False
    unsafe: bool = False
    verify: bool = True
    force: bool = True  # the batch owns {out_dir}/{name}/; false refuses existing outputs
    out_dir: str = "dist"


@dataclass(frozen=True)
class JobSpec:
    """One model to convert: its unique name, source path and options; where it was declared."""

    name: str
    source: str
    options: JobOptions
    where: str  # "models.toml:12", or "command line"


def _line_map(text: str) -> dict:
    """Where things are declared: ('model', i) -> header line, ('model', i, key), ('defaults',
    key) and ('top', key) -> line (1-based). tomllib gives no positions, so lines are scanned."""
    lines, section, model = {}, "top", -1
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if re.match(r"^\[\[\s*model\s*\]\]", stripped):
            section, model = "model", model + 1
            lines[("model", model)] = number
        elif re.match(r"^\[\s*defaults\s*\]", stripped):
            section = "defaults"
        elif stripped.startswith("["):
            section = "other"
        else:
            match = re.match(r'^"?([A-Za-z0-9_-]+)"?\s*=', stripped)
            if match:
                key = (section, model, match.group(1)) if section == "model" else \
                    (section, match.group(1))
                lines.setdefault(key, number)
    return lines


def parse_manifest(path: str) -> list[JobSpec]:
    """The jobs a manifest declares (globs expanded), each checked: keys, values, sources that
    exist, unique names. Paths are made relative to the manifest's folder."""
    try:
        text = storage.read_bytes(path).decode("utf-8")
        data = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"{path}: not a TOML manifest ({err}); see `freeze batch --help`") from err
    except GraphFreezeError as err:
        raise ConfigError(str(err)) from err
    lines = _line_map(text)

    def at(*key) -> str:
        return f"{path}:{lines.get(key, 1)}"

    if data.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(f"{at('top', 'schema_version')}: schema_version must be "
                          f"{SCHEMA_VERSION}; add `schema_version = 1` at the top")
    unknown = sorted(set(data) - {"schema_version", "defaults", "model"})
    if unknown:
        raise ConfigError(f"{at('top', unknown[0])}: unknown key '{unknown[0]}' (keys: "
                          "schema_version, [defaults], [[model]])")
    defaults = data.get("defaults", {})
    _check_keys(defaults, set(), lambda k: at("defaults", k), "[defaults]")
    models = data.get("model", [])
    if not isinstance(models, list) or not models:
        raise ConfigError(f"{path}:1: no [[model]] entries; add one with source = \"PATH\"")
    folder = storage.dirname(path)
    specs = []
    for i, entry in enumerate(models):
        _check_keys(entry, {"name", "source"}, lambda k, i=i: at("model", i, k), "[[model]]")
        where = at("model", i)
        raw = {**defaults, **{k: v for k, v in entry.items() if k not in ("name", "source")}}
        options = _job_options(raw, where, folder)
        source = entry.get("source")
        if not isinstance(source, str) or not source:
            raise ConfigError(f"{where}: [[model]] needs source = \"PATH\" (a checkpoint, "
                              "model_dir, SavedModel, Keras file or frozen graph)")
        matches = _expand_source(storage.join(folder, source) if folder else source,
                                 at("model", i, "source"))
        if "name" in entry and not (isinstance(entry["name"], str) and
                                    re.fullmatch(r"[A-Za-z0-9._-]*[A-Za-z0-9][A-Za-z0-9._-]*",
                                                 entry["name"])):
            raise ConfigError(f"{at('model', i, 'name')}: name must be letters, digits, '.', '_' "
                              "or '-' with at least one letter or digit (it names a folder in "
                              "out_dir)")
        if "name" in entry and len(matches) > 1:
            raise ConfigError(f"{at('model', i, 'name')}: name given for a glob matching "
                              f"{len(matches)} sources; drop name (names are derived)")
        for match in matches:
            specs.append(JobSpec(entry.get("name", ""), match, options, where))
    return named(specs, folder)


def specs_from_paths(paths: list[str], raw: dict) -> list[JobSpec]:
    """Jobs for `freeze batch PATH...`: one per path (globs expanded), shared options."""
    options = _job_options(raw, "command line", "")
    specs = [JobSpec("", match, options, "command line")
             for path in paths for match in _expand_source(path, path)]
    return named(specs, "")


def _check_keys(table, allowed_extra: set[str], at, what: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{at('')}: {what} must be a table")
    known = option_names(JobOptions) | allowed_extra
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(f"{at(key)}: unknown key '{key}' in {what}{hint} (keys: "
                              f"{', '.join(sorted(known))})")


def _job_options(raw: dict, where: str, folder: str) -> JobOptions:
    raw = {k: ([v] if isinstance(v, str) else v)
           if k in ("outputs", "inputs", "targets", "custom_objects") else v
           for k, v in raw.items()}
    for key in ("outputs", "inputs", "targets"):  # "a,b" as on the command line
        if isinstance(raw.get(key), list) and all(isinstance(v, str) for v in raw[key]):
            raw[key] = parse_names(raw[key])
    options = parse_options(JobOptions, raw, where)
    if folder:  # paths in a manifest are relative to its folder
        rel = {k: storage.join(folder, getattr(options, k)) for k in ("meta", "calibration",
                                                                     "out_dir")
               if getattr(options, k) and not _absolute(getattr(options, k))}
        options = dataclasses.replace(options, **rel)
    return options


def _absolute(path: str) -> bool:
    return storage.is_remote(path) or os.path.isabs(os.path.expanduser(path))


def _expand_source(path: str, where: str) -> list[str]:
    path = storage.expand(path)
    if not any(c in path for c in "*?["):
        if not storage.exists(path.rstrip("/")) and not storage.exists(path + ".index"):
            raise ConfigError(f"{where}: source {path} does not exist; fix the path (relative "
                              "to the manifest's folder)")
        return [path]
    if storage.is_remote(path):
        matches = sorted(gfile().glob(path))
    else:
        matches = sorted(globlib.glob(path))
    if not matches:
        raise ConfigError(f"{where}: source glob {path} matches nothing; fix the pattern")
    return matches


_SUFFIX = re.compile(r"(\.(keras|h5|hdf5|pb|pbtxt|index|meta))$")


def named(specs: list[JobSpec], folder: str) -> list[JobSpec]:
    """Each spec with a unique name: the one given, or the source's last path parts (as few as
    make it unique). Two jobs with one name are a ConfigError."""
    parts = {}
    for spec in specs:
        rel = spec.source
        if folder and rel.startswith(folder.rstrip("/") + "/"):
            rel = rel[len(folder.rstrip("/")) + 1:]
        parts[id(spec)] = [p for p in _SUFFIX.sub("", rel.rstrip("/")).split("/")
                           if p not in ("", ".", "..")] or ["model"]
    depth = {id(s): 1 for s in specs}
    for _ in range(32):
        names = {id(s): s.name or "-".join(parts[id(s)][-depth[id(s)]:]) for s in specs}
        clashes = {n for n in names.values() if list(names.values()).count(n) > 1}
        grow = [s for s in specs if not s.name and names[id(s)] in clashes
                and depth[id(s)] < len(parts[id(s)])]
        if not grow:
            break
        for s in grow:
            depth[id(s)] += 1
    clashing = [n for n in names.values() if list(names.values()).count(n) > 1]
    for spec in specs:  # still the same at every depth (model.keras, model.h5): keep the suffix
        if not spec.name and names[id(spec)] in clashing:
            names[id(spec)] += "_" + (_SUFFIX.search(spec.source.rstrip("/")) or
                                      re.search(r"$", "")).group(0).lstrip(".")
    result, seen = [], {}
    for spec in specs:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", names[id(spec)].rstrip("_"))
        if not name.strip("."):
            raise ConfigError(f"{spec.where}: job name '{name}' would write outside out_dir; "
                              "give the [[model]] a name with a letter or digit")
        if name in seen:
            raise ConfigError(f"{spec.where}: job name '{name}' is also used at {seen[name]}; "
                              "give each [[model]] a unique name")
        seen[name] = spec.where
        result.append(dataclasses.replace(spec, name=name))
    return result
