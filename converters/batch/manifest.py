"""The batch manifest (`models.toml`): validated whole, before any model is opened.

    schema_version = 1
    [defaults]                    # any job option, in [defaults] or per [[model]]
    targets = ["android"]
    out_dir = "dist"              # each model's artifacts go to {out_dir}/{name}/
    tolerance = 1e-4              # any stage option, by its name (explain, opset, ...)
    [defaults.target_options.edge-int8]
    calibration_samples = 50      # a stage option for one target only
    [[model]]
    name = "iris"                 # optional: derived from the source path, unique
    source = "runs/iris"          # any PATH `freeze` takes; relative to the manifest's folder
    outputs = ["probs"]
    [[model]]
    source = "exports/*/saved_model"   # a glob: one job per match
    tag = "serve"                 # any source option, by its name

Keys are the job options below, plus every stage and source option by its field name (declared
once, in the stage's or source's options dataclass); paths among them (declared `path=True`) are
relative to the manifest's folder.

Every mistake is a ConfigError naming `models.toml:LINE` and the fix (exit 6).
"""

from __future__ import annotations

import dataclasses
import difflib
import glob as globlib
import os
import re
from dataclasses import dataclass

from graphfreeze.batch.job_names import named
from graphfreeze.errors import ConfigError, GraphFreezeError
from graphfreeze.io import storage
from graphfreeze.io import tomlread as tomllib
from graphfreeze.io.paths import gfile
from graphfreeze.names import parse_names
from graphfreeze.options import option_names, parse_options

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class JobOptions:
    """A job's options: what to convert and where, plus the stage and source options given."""

    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    targets: tuple[str, ...] = ("android",)
    kind: str = "auto"
    source_options: dict | None = None  # source options (tag, meta, a plugin source's ...)
    stage_options: dict | None = None  # stage options for every target (tolerance, opset, ...)
    target_options: dict | None = None  # target -> stage options for that target only
    unsafe: bool = False
    verify: bool = True
    force: bool = True  # the batch owns {out_dir}/{name}/; false refuses existing outputs
    out_dir: str = "dist"
    fail_on: tuple[str, ...] = ()  # budget rules ("size > +5%"), checked against the baseline
    baseline: str | None = None  # an earlier report.json to compare with (one per run)


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


def _options_of(registry) -> tuple[set[str], set[str], set[str], set[str]]:
    """(stage option names, source option names, path option names, those of paths read) the
    registry declares."""
    from graphfreeze.options import option_names, paths_of

    stage, source = registry.option_classes("stage"), registry.option_classes("source")
    return (set().union(*map(option_names, stage)), set().union(*map(option_names, source)),
            paths_of(stage) | paths_of(source), paths_of([*stage, *source], inputs_only=True))


def parse_manifest(path: str, registry) -> list[JobSpec]:
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
    declared = _options_of(registry)
    defaults = data.get("defaults", {})
    _check_keys(defaults, set(), lambda k: at("defaults", k), "[defaults]", declared)
    models = data.get("model", [])
    if not isinstance(models, list) or not models:
        raise ConfigError(f"{path}:1: no [[model]] entries; add one with source = \"PATH\"")
    folder = storage.dirname(path)
    specs = []
    for i, entry in enumerate(models):
        _check_keys(entry, {"name", "source"}, lambda k, i=i: at("model", i, k), "[[model]]",
                    declared)
        where = at("model", i)
        raw = {**defaults, **{k: v for k, v in entry.items() if k not in ("name", "source")}}
        raw["target_options"] = _merged(defaults.get("target_options"),
                                        entry.get("target_options"), where)
        options = _job_options(raw, where, folder, declared)
        _check_read_paths(options, declared[3], lambda key, i=i, entry=entry, where=where: (
            at("model", i, key) if key in entry else at("defaults", key) if key in defaults
            else where))  # (a target_options table's key: the model's line)
        source = entry.get("source")
        if not isinstance(source, str) or not source:
            raise ConfigError(f"{where}: [[model]] needs source = \"PATH\" (a checkpoint, "
                              "model_dir, SavedModel, Keras file or frozen graph)")
        matches = _expand_source(storage.join(folder, source) if folder else source,
                                 at("model", i, "source"), registry)
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


def specs_from_paths(paths: list[str], raw: dict, registry) -> list[JobSpec]:
    """Jobs for `freeze batch PATH...`: one per path (globs expanded), shared options."""
    declared = _options_of(registry)
    _check_keys(raw, set(), lambda k: "command line", "the options", declared)
    options = _job_options(raw, "command line", "", declared)
    specs = [JobSpec("", match, options, "command line")
             for path in paths for match in _expand_source(path, "command line", registry)]
    return named(specs, "")


def _check_keys(table, allowed_extra: set[str], at, what: str, declared) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{at('')}: {what} must be a table")
    stage, source, _, _ = declared
    known = (option_names(JobOptions) - {"stage_options"}) | stage | source | allowed_extra
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(f"{at(key)}: unknown key '{key}' in {what}{hint} (keys: "
                              f"{', '.join(sorted(known))})")


def _merged(defaults, model, where: str) -> dict | None:
    """[defaults.target_options.T] and [model.target_options.T], the model's winning per key."""
    merged: dict = {}
    for table in (defaults, model):
        if table is None:
            continue
        if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
            raise ConfigError(f"{where}: target_options must be tables, e.g. "
                              "[model.target_options.edge-int8] calibration_samples = 50")
        for target, options in table.items():
            merged[target] = {**merged.get(target, {}), **options}
    return merged or None


def _job_options(raw: dict, where: str, folder: str, declared) -> JobOptions:
    stage, source, path_keys, _ = declared
    raw = {k: ([v] if isinstance(v, str) else v)
           if k in ("outputs", "inputs", "targets", "custom_objects", "fail_on") else v
           for k, v in raw.items() if v is not None}
    for key in ("outputs", "inputs", "targets"):  # "a,b" as on the command line
        if isinstance(raw.get(key), list) and all(isinstance(v, str) for v in raw[key]):
            raw[key] = parse_names(raw[key])
    if raw.get("targets") == []:
        raise ConfigError(f"{where}: targets names no target; name one or more (see `freeze "
                          "targets`), or leave targets out for android")
    job_keys = option_names(JobOptions)
    stage_options = {k: raw.pop(k) for k in list(raw) if k not in job_keys and k in stage}
    source_options = {**{k: raw.pop(k) for k in list(raw) if k not in job_keys and k in source},
                      **(raw.pop("source_options", None) or {})}
    options = parse_options(JobOptions, {**raw, "stage_options": stage_options or None,
                                         "source_options": source_options or None}, where)

    def relative(table: dict | None) -> dict | None:  # paths are relative to the manifest
        if not table or not folder:
            return table
        return {k: storage.join(folder, v) if k in path_keys and isinstance(v, str) and
                not _absolute(v) else v for k, v in table.items()}

    out_dir = options.out_dir if not folder or _absolute(options.out_dir) else \
        storage.join(folder, options.out_dir)
    baseline = options.baseline if not folder or not options.baseline or \
        _absolute(options.baseline) else storage.join(folder, options.baseline)
    targets = {t: relative(o) for t, o in (options.target_options or {}).items()} or None
    return dataclasses.replace(options, out_dir=out_dir, baseline=baseline,
                               stage_options=relative(options.stage_options),
                               source_options=relative(options.source_options),
                               target_options=targets)


def _check_read_paths(options: JobOptions, keys: set[str], at) -> None:
    """Each path an option reads (calibration data, --verify-data, golden outputs) exists."""
    for table in (options.stage_options, options.source_options,
                  *(options.target_options or {}).values()):
        for key, value in (table or {}).items():
            if key in keys and isinstance(value, str) and not storage.exists(value.rstrip("/")):
                raise ConfigError(f"{at(key)}: {key} {value} does not exist; fix the path "
                                  "(relative to the manifest's folder)")


def _absolute(path: str) -> bool:
    return storage.is_remote(path) or os.path.isabs(os.path.expanduser(path))


def _expand_source(path: str, where: str, registry) -> list[str]:
    """`path`'s matches, each a file or one a source kind recognises (a checkpoint prefix: its
    files have other names, e.g. `runs/*/model.ckpt-200`); none is a ConfigError."""
    path = storage.expand(path)
    if not any(c in path for c in "*?["):
        if not _is_source(path, registry):
            raise ConfigError(f"{where}: source {path} does not exist; fix the path" + (
                "" if where == "command line" else " (relative to the manifest's folder)"))
        return [path]
    matches = _glob(path)
    folders, name = path.rsplit("/", 1) if "/" in path else ("", path)
    if not matches and folders and name and not any(c in name for c in "*?["):
        matches = [match for match in (storage.join(folder, name) for folder in _glob(folders))
                   if _is_source(match, registry)]
    if not matches:
        raise ConfigError(f"{where}: source glob {path} matches nothing; fix the pattern")
    return matches


def _is_source(path: str, registry) -> bool:
    return storage.exists(path.rstrip("/")) or any(s.detect(path) for s in registry.sources())


def _glob(pattern: str) -> list[str]:
    return sorted(gfile().glob(pattern) if storage.is_remote(pattern) else globlib.glob(pattern))
