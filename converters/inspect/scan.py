"""`freeze scan`: the untrusted-model checks on model files, without converting anything.

Each model is found (sources.detect) and its source kind scans it (`Source.scan`): its files
parsed and put through the checks a conversion runs before it loads the model (structure, host
ops, assets outside the model, Keras layers that run code). The files are read with
graphfreeze.proto (TensorFlow's protos and op registry without TensorFlow); TensorFlow is imported
only where a check needs it (a Keras TFOpLambda's function, an op outside the snapshot). No
session is made, no model loaded, nothing of the model runs. Each check reports the first fault
it finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from graphfreeze.errors import InputError
from graphfreeze.io import storage
from graphfreeze.plugins import Source

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
    called once, before the first check; native libraries' chatter is kept off stderr while
    checks run (a check that needs TensorFlow imports it)."""
    from graphfreeze.process.quiet import native_stderr_off
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
            with native_stderr_off():
                findings = check_model(found, source.name, registry)
            results.append(Scanned(found, source.name, findings))
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


def check_model(path: str, kind: str, registry=None) -> list[Finding]:
    """The findings of the `kind` source's own scan (`Source.scan`) of the model at `path`. A
    file that does not parse or validate is one finding: the checks after it would read
    garbage. A kind without checks (a plugin's, or one no source registers) says so."""
    from graphfreeze.registry import Registry

    registry = registry or Registry.default()
    source = next((s for s in registry.sources() if s.name == kind), None)
    if source is None:
        source = Source()
        source.name = kind
    try:
        return [Finding.of(err) for err in source.scan(path, source.options())]
    except InputError as err:
        return [Finding.of(err)]
