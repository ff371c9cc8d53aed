"""The batch cache, content-addressed: a job's key is the hash of every file it reads, its
canonical options, the definitions of its targets and stages, and the versions of graphfreeze,
its converters and Python. An entry holds the job's files and their sha256s; a damaged entry is
rebuilt, never served. Reading or writing the cache imports no TensorFlow (local folders and
gs://; cache_store.py). `freeze cache ls/prune`: cache_admin.py."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sys
from importlib import metadata

from graphfreeze.batch.cache_store import open_store, verified
from graphfreeze.io import storage

# the distributions whose versions enter every key: graphfreeze, all it declares it requires (its
# base and every extra but `dev`: a format's extra names its converter and runtime), Keras 3 (the
# `.keras` loader TensorFlow brings) and every package that plugs into graphfreeze (entry points:
# a plugin format's own version, and what it declares it requires but its extras)
NOT_KEYED_EXTRAS = {"dev"}


def default_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "graphfreeze")


@functools.cache
def _environment() -> dict:
    """Versions of what makes the artifacts, and a digest of graphfreeze's own code and data
    (a development checkout changes without a new version)."""
    versions = {}
    for name in keyed_distributions():
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    code = hashlib.sha256()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for full, rel in storage.tree_files(root):
        if rel.endswith((".py", ".toml", ".json")) and "__pycache__" not in rel:
            code.update(rel.encode() + b"\0")
            with open(full, "rb") as f:
                code.update(hashlib.sha256(f.read()).digest())
    return {"versions": versions, "python": sys.version.split()[0], "code": code.hexdigest()}


def keyed_distributions() -> list[str]:
    """The distribution names whose installed versions enter the key (see NOT_KEYED_EXTRAS)."""
    import re

    from graphfreeze.registry import GROUPS

    names = {"graphfreeze", "keras"}
    for requirement, extra in _declared():
        if extra not in NOT_KEYED_EXTRAS:
            names.add(re.match(r"[A-Za-z0-9._-]+", requirement)[0])
    for group in set(GROUPS.values()):
        for ep in metadata.entry_points(group=group):
            if getattr(ep, "dist", None) is not None:  # a plugin: itself and what it requires
                names.add(ep.dist.name)
                names.update(r for r in ep.dist.requires or [] if "extra" not in r)
    names = {re.match(r"[A-Za-z0-9._-]+", name)[0] for name in names}
    return sorted({re.sub(r"[-_.]+", "-", name).lower() for name in names})


def _declared() -> list[tuple[str, str | None]]:
    """(requirement, its extra or None) as graphfreeze declares them: a checkout's own
    pyproject.toml beside the package (editable, or on PYTHONPATH with no metadata; an old
    egg-info there may lag), else the installed distribution's metadata."""
    import re

    pyproject = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "pyproject.toml")
    if os.path.isfile(pyproject):
        from graphfreeze.io import tomlread

        with open(pyproject, encoding="utf-8") as f:
            project = tomlread.loads(f.read()).get("project", {})
        if project.get("name") == "graphfreeze":
            return [(r, None) for r in project.get("dependencies", [])] + \
                [(r, extra) for extra, rs in project.get("optional-dependencies", {}).items()
                 for r in rs]
    try:
        declared = metadata.requires("graphfreeze") or []
    except metadata.PackageNotFoundError:
        declared = []
    return [(r, (re.search(r"""extra\s*==\s*["']([^"']+)["']""", r) or [None, None])[1])
            for r in declared]


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    for full, rel in storage.tree_files(path):
        digest.update(rel.encode() + b"\0")
        digest.update(hashlib.sha256(storage.read_bytes(full)).digest())
    return digest.hexdigest()


def job_key(job) -> str:
    """The cache key of a prepared job (see the module docstring)."""
    prepared = job.prepared
    request = prepared.request
    source = prepared.source
    files = source.files(request.source, prepared.source_options)
    read = {path: _file_digest(path) for path in sorted({*files, *_option_files(prepared)})}
    targets = []
    for plan in prepared.plans:
        targets.append({
            "target": plan.target.name, "provider": plan.target.provider,
            "stages": [{"name": s.stage.name, "options": keyed_options(s.options),
                        "provider": prepared.registry.provider("stage", s.stage.name),
                        "code": _code_digest(s.stage.run)} for s in plan.steps],
            "runtimes": _runtimes(prepared.registry, plan)})
    canonical = {
        "source": request.source, "kind": source.name,
        "source_options": repr(prepared.source_options), "unsafe": request.unsafe,
        "outputs": request.outputs, "inputs": request.inputs, "verify": request.verify,
        "stage_options": sorted(request.stage_options.items()),
        "target_options": sorted((t, sorted(o.items())) for t, o in request.target_options.items()),
        "files": {os.path.relpath(p, os.path.dirname(request.source.rstrip("/")) or ".")
                  if not storage.is_remote(p) else p: d for p, d in read.items()},
        "targets": targets, "names": {t: storage.basename(p) for t, p in prepared.paths.items()},
        "source_code": _code_digest(type(source)),  # plugin sources included
        "custom_objects": {spec: _module_digest(spec.partition(":")[0]) for spec in
                           getattr(prepared.source_options, "custom_objects", ()) or ()},
        "passes": {graph_pass.name: _code_digest(graph_pass.run)  # resolved by the plan
                   for plan in prepared.plans for step in plan.steps
                   for graph_pass in getattr(step.options, "passes", ())},
        "environment": _environment()}
    text = json.dumps(canonical, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _runtimes(registry, plan) -> dict:
    """Versions of what a target's formats run beyond Python's distributions, each format's
    `cache_key.versions()` where its folder has one (the web format's npm runtimes)."""
    found = {}
    for step in plan.steps:
        fmt = registry.format_of(step.stage.name)
        versions = fmt.part("cache_key", "versions") if fmt is not None else None
        found.update(versions() if versions else {})
    return found


def keyed_options(options) -> str:
    """A stage's options as the key hashes them: the fields declared to feed it (`cache=True`,
    the default; one that changes no output byte, e.g. a log level, says `cache=False`)."""
    import dataclasses

    from graphfreeze.options import meta

    return repr({f.name: getattr(options, f.name) for f in dataclasses.fields(options)
                 if meta(f, "cache", True)})


def _option_files(prepared) -> list[str]:
    """The files stage options read (declared `path=True`, not `output`: an int8 calibration
    set, verification data, golden outputs)."""
    from graphfreeze.options import paths_of

    keys = paths_of(prepared.registry.option_classes("stage"), inputs_only=True)
    request = prepared.request
    tables = [request.stage_options, *request.target_options.values()]
    return [v for table in tables for k, v in table.items() if k in keys and isinstance(v, str)]


def _module_digest(module: str) -> str:
    """sha256 of a module's file, found without importing it (a custom object's code)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    origin = getattr(spec, "origin", None) if spec else None
    try:
        with open(origin, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except (TypeError, OSError):
        return ""


def _code_digest(func) -> str:
    """sha256 of the file defining a stage's run function, a source class or a pass (plugins
    included)."""
    import inspect

    try:
        path = inspect.getsourcefile(func)
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except (TypeError, OSError):
        return ""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a job made: its files (relative name -> bytes: artifacts, SavedModel trees as
    `x.savedmodel/...`, sidecars) and [(target, artifact name, sidecar name)]; loaded from the
    cache, the time making them took (None for an entry written before it was recorded)."""

    files: dict[str, bytes]
    written: list[tuple[str, str, str]]
    seconds: float | None = None


class Cache:
    """The cache at `folder` (local, gs:// or ram://; see cache_store.py for how entries are
    laid out and published). `check`: a folder that cannot be written is one OutputError line,
    before any job runs."""

    def __init__(self, folder: str, check: bool = True):
        self.folder = folder
        self._store = open_store(folder)
        if check:
            self._store.check_writable()

    def load(self, key: str) -> Outcome | None:
        """The entry for `key` if it is there and whole (every sha256 checks), else None; a hit
        is marked used."""
        try:
            found = self._store.load(key)
            if found is None or not verified(found[1], found[0]):
                return None
        except Exception:  # noqa: BLE001 -- missing or damaged: rebuilt, never served
            return None
        self._store.touch(key)
        record, files = found
        seconds = record.get("seconds")
        return Outcome(files, [tuple(w) for w in record["written"]],
                       float(seconds) if isinstance(seconds, int | float) else None)

    def store(self, key: str, outcome: Outcome, job: str | None = None,
              seconds: float | None = None) -> None:
        """Publish the entry whole (see cache_store.py), with the time the job took; best
        effort."""
        try:
            self._store.store(key, outcome.files, outcome.written, job, seconds)
        except Exception:  # noqa: BLE001 -- a cache that cannot be written is only slower
            pass
