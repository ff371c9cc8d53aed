"""`freeze scan`: the untrusted-model checks on model files, without converting anything.

Each file is parsed and put through the checks a conversion runs before it loads the model:
structural validation (graph/checks/validate.py, read_keras_config), host ops outside the
saver and assets outside the model (saved_model_safety.py, on SavedModels and checkpoint meta
graphs alike), host ops in a frozen graph (safety.py) and Keras layer configs
(keras_config.py). TensorFlow is imported for its protos and op registry; no session is made,
no model loaded, nothing of the model runs. Each check reports the first fault it finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from graphfreeze.errors import InputError
from graphfreeze.io import storage

_TRUST = re.compile(r"(; graphfreeze does not run ops that touch the host)?; pass --unsafe if you "
                    r"trust this (model|file)$")
_SUBJECT = re.compile(r"(?:node|layer) '([^']*)' \((\w+)")


@dataclass(frozen=True)
class Finding:
    """One fault: `message` is one line naming the file and the node, layer or asset."""

    message: str
    node: str | None = None
    op: str | None = None

    @classmethod
    def of(cls, err: InputError) -> Finding:
        message = _TRUST.sub("", str(err))
        subject = _SUBJECT.search(message)
        return cls(message, *(subject.groups() if subject else ()))


@dataclass
class Scanned:
    """A scanned path: its kind (None: not a model) and what was found."""

    path: str
    kind: str | None
    findings: list[Finding] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "ok": not self.findings,
                "findings": [vars(f) for f in self.findings]}


def scan(paths, registry=None, on_load=lambda: None) -> list[Scanned]:
    """Scan each path (a model, or a folder searched recursively for models). `on_load()` is
    called once, before the first check that may import TensorFlow."""
    from graphfreeze.registry import Registry

    registry = registry or Registry.default()
    loaded, results, seen = [], [], set()
    for path in paths:
        for found, source in models_in(storage.expand(str(path)), registry):
            if isinstance(source, InputError):
                results.append(Scanned(found, None, [Finding.of(source)]))
                continue
            key = _files_read(found, source)  # model.ckpt-1.index and .meta: one checkpoint
            if key in seen:
                continue
            seen.add(key)
            if not loaded:
                loaded.append(on_load())
            results.append(Scanned(found, source.name, check_model(found, source.name)))
    return results


def _files_read(path: str, source) -> tuple:
    try:
        return source.name, *sorted(source.files(path, source.options()))
    except InputError:  # the check says what is missing
        return source.name, path


def models_in(path: str, registry, top: bool = True) -> list[tuple[str, object]]:
    """(path, its Source or the InputError detection raised) for `path` itself if it is a model,
    else every model under it (hidden folders skipped). At the top, a path that is not a model
    and holds none is one InputError saying so (sources.detect's words)."""
    from graphfreeze.sources.detect import detect

    bare = path.rstrip("/") or path
    try:
        source = next((s for s in registry.sources() if s.detect(path)), None)
        if source is None and not storage.isdir(bare):
            return [(path, detect(path, registry))] if top else []
    except InputError as err:
        return [(path, err)]
    if source is not None:
        return [(path, source)]
    found = [item for name in sorted(storage.listdir(bare)) if not name.startswith(".")
             for item in models_in(storage.join(bare, name.rstrip("/")), registry, False)]
    if top and not found:
        try:
            detect(path, registry)
        except InputError as err:
            return [(path, err)]
    return found


def check_model(path: str, kind: str) -> list[Finding]:
    """The findings of every check for the model at `path` of `kind`. A file that does not
    parse or validate is one finding: the checks after it would read garbage."""
    findings = []

    def check(func, *args) -> None:
        try:
            func(*args)
        except InputError as err:
            findings.append(Finding.of(err))

    if kind not in CHECKS:
        return [Finding(f"{path}: graphfreeze has no scan for '{kind}' models (a plugin's source "
                        "kind); convert it only if you trust it")]
    check(CHECKS[kind], path, check)
    return findings


def _checkpoint(path: str, check) -> None:
    from graphfreeze.graph.checks.saved_model_safety import check_saved_model
    from graphfreeze.sources.checkpoint_files import locate, read_meta_graph

    meta_file = locate(path).meta
    meta = read_meta_graph(meta_file)  # validates the graph
    check(check_saved_model, meta, storage.dirname(meta_file), meta_file)


def _saved_model(path: str, check) -> None:
    from graphfreeze.graph.checks.saved_model_safety import check_saved_model
    from graphfreeze.graph.checks.validate import check_graph_def
    from graphfreeze.sources.saved_model import read_saved_model_proto, saved_model_dir

    folder = saved_model_dir(path)
    for meta in read_saved_model_proto(folder).meta_graphs:  # every tag set: --tag picks any
        check_graph_def(meta.graph_def, storage.join(folder, "saved_model.pb"))
        check(check_saved_model, meta, folder, folder)


def _frozen(path: str, check) -> None:
    from graphfreeze.graph.checks.safety import check_graph
    from graphfreeze.sources.frozen import read_graph_def

    graph_def = read_graph_def(path)  # validates the graph
    check(check_graph, graph_def, [n.name for n in graph_def.node], path)


def _keras(path: str, check) -> None:
    import shutil

    from graphfreeze.sources.keras_config import check_keras_config, read_keras_config
    from graphfreeze.sources.keras_model import local_copy

    local, tmp = local_copy(path)  # Keras files are read locally
    try:
        config = read_keras_config(local)  # parses and checks the config's structure
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    check(check_keras_config, config, path)


CHECKS = {"checkpoint": _checkpoint, "saved_model": _saved_model, "frozen_graph": _frozen,
          "keras": _keras}
