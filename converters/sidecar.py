"""The sidecar: one JSON record beside each artifact saying what it is and how it was made."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from graphfreeze import __version__
from graphfreeze.errors import InputError
from graphfreeze.io import storage

# 2: `format` is the format's name (frozen_graph, saved_model, tflite, onnx, openvino); schema 1
# wrote frozen_graph_pb and openvino_ir, which `read` renames.
SCHEMA_VERSION = 2
_SCHEMA_1_FORMATS = {"frozen_graph_pb": "frozen_graph", "openvino_ir": "openvino"}


@dataclass(frozen=True)
class Sidecar:
    target: str
    format: str
    file: str  # the artifact's base name
    bytes: int
    sha256: str
    source: dict  # kind, path, graph file, and what the source noted
    inputs: list[dict]
    outputs: list[dict]
    flags_folded: dict
    notes: dict  # what the stages recorded (variables frozen, dropouts removed, warnings)
    facts: dict  # what the export stage recorded (node_count, op_counts, signature, ...)
    verification: dict | None = None
    summary: tuple[str, ...] = field(default=(), compare=False)  # printed, not stored
    graphfreeze_version: str = __version__
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def of(cls, state, source_path: str) -> Sidecar:
        artifact = state.artifact
        facts = dict(artifact.facts)
        verification = facts.pop("verification", None)
        saved = state.memo.get("golden_saved")  # --save-golden DIR: `freeze verify` reads it
        if saved:
            facts["golden"] = saved[0] if storage.is_remote(saved[0]) else os.path.relpath(
                saved[0], os.path.dirname(os.path.abspath(artifact.path)))
        return cls(target=state.target, format=artifact.format.name,
                   file=storage.basename(artifact.path), bytes=artifact.size,
                   sha256=artifact.sha256,
                   source={"kind": state.model.kind, "path": source_path,
                           "graph": state.model.graph_file, **state.model.notes},
                   inputs=[t.as_json() for t in artifact.inputs],
                   outputs=[t.as_json() for t in artifact.outputs],
                   flags_folded=dict(sorted(state.flags.items())), notes=dict(state.notes),
                   facts=facts, verification=verification, summary=artifact.summary)

    @property
    def warnings(self) -> list[str]:
        return list(self.notes.get("warnings", []))

    def to_json(self) -> dict:
        """Flat, as files written before the record had a schema: notes and facts at top level."""
        return {"schema_version": self.schema_version,
                "graphfreeze_version": self.graphfreeze_version, "target": self.target,
                "format": self.format, "file": self.file, "bytes": self.bytes,
                "sha256": self.sha256, "source": self.source, "inputs": self.inputs,
                "outputs": self.outputs, "flags_folded": self.flags_folded,
                **{k: self.notes[k] for k in sorted(self.notes)}, **self.facts,
                **({"verification": self.verification} if self.verification else {})}


def read(path: str) -> dict:
    """The sidecar beside the artifact at `path` as JSON (schema 1 read as 2); one InputError
    when there is none or it is not one."""
    where = f"{path}.json"
    if not storage.exists(where):
        raise InputError(f"{path}: no sidecar {where}; this needs the sidecar graphfreeze "
                         "wrote beside the artifact (it names the inputs, outputs and target)")
    try:
        sidecar = json.loads(storage.read_bytes(where))
    except ValueError as err:
        raise InputError(f"{where}: not JSON ({err}); convert the model again") from err
    missing = [k for k in ("target", "inputs", "outputs", "sha256")
               if not isinstance(sidecar, dict) or k not in sidecar]
    if missing:
        raise InputError(f"{where}: not a graphfreeze sidecar (no {', '.join(missing)}); "
                         "convert the model again")
    version = sidecar.get("schema_version", 1)
    if version not in (1, SCHEMA_VERSION) or version is True:
        raise InputError(f"{where}: sidecar schema {version!r}, and this graphfreeze reads 1 and "
                         f"{SCHEMA_VERSION}; verify with the graphfreeze that wrote it, or convert "
                         "the model again")
    wrong = _malformed(sidecar)
    if wrong:
        raise InputError(f"{where}: not a graphfreeze sidecar ({wrong}); convert the model again")
    if version == 1:
        name = sidecar.get("format")
        sidecar = {**sidecar, "schema_version": SCHEMA_VERSION,
                   "format": _SCHEMA_1_FORMATS.get(name, name)}
    return sidecar


def golden(path: str, sidecar: dict, unsafe: bool = False) -> str | None:
    """The golden folder the run that wrote the artifact at `path` saved (--save-golden), as
    its sidecar records it (golden.recorded_folder: beside the artifact unless `unsafe`), or
    None."""
    recorded = sidecar.get("golden")
    if not isinstance(recorded, str) or not recorded:
        return None
    from graphfreeze.data.golden import recorded_folder

    return recorded_folder(path, recorded, unsafe)


def _malformed(sidecar: dict) -> str | None:
    """What in a sidecar's fields verify reads is not as graphfreeze writes it, if anything."""
    if not isinstance(sidecar["target"], str) or not sidecar["target"]:
        return f"target {sidecar['target']!r} is not a target's name"
    if not isinstance(sidecar["sha256"], str) or len(sidecar["sha256"]) != 64:
        return f"sha256 {sidecar['sha256']!r} is not a sha256"
    if not isinstance(sidecar.get("verification", {}), dict):
        return "verification is not a record"
    for role in ("inputs", "outputs"):
        entries = sidecar[role]
        if not isinstance(entries, list) or role == "outputs" and not entries:
            return f"{role} is not a list of tensors"
        for e in entries:
            shape = e.get("shape") if isinstance(e, dict) else None
            if not isinstance(e, dict) or not isinstance(e.get("name"), str) or \
                    not isinstance(e.get("dtype"), str) or shape is not None and not (
                    isinstance(shape, list) and all(d is None or isinstance(d, int) and
                                                    not isinstance(d, bool) for d in shape)):
                return f"{role} holds {e!r}, not a tensor's name, dtype and shape"
    return None
