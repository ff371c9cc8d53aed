"""Which kind of model a path holds, and loading it: one entry point for every source."""

from __future__ import annotations

import re

from graphfreeze import storage
from graphfreeze.errors import InputError

KINDS = ("checkpoint", "saved_model", "keras", "frozen_graph")
EXPECTED = ("a checkpoint prefix or model_dir (model.ckpt-N.index + .meta), a SavedModel "
            "directory (saved_model.pb + variables/), a Keras file (.keras, .h5) or a frozen "
            "graph (.pb, .pbtxt)")
_CKPT_FILE = re.compile(r"\.(meta|index|data-\d{5}-of-\d{5})$")


def detect(path: str) -> str:
    """The kind of model at `path`, from the files there (no TensorFlow needed)."""
    bare = path.rstrip("/") or path
    if storage.exists(bare + ".index"):  # a checkpoint prefix (may look like a dir remotely)
        return "checkpoint"
    if storage.isdir(bare):
        names = set(storage.listdir(bare))
        if {"saved_model.pb", "saved_model.pbtxt"} & names:
            return "saved_model"
        if "checkpoint" in names or any(n.endswith(".index") for n in names):
            return "checkpoint"
        if "variables" in names or "variables/" in names:
            raise InputError(f"{path}: looks like a SavedModel (it has variables/) but has no "
                             "saved_model.pb; copy the whole directory the model was saved to")
        raise InputError(f"{path}: a directory holding no model; expected {EXPECTED}")
    if bare.endswith((".keras", ".h5", ".hdf5")):
        return "keras"
    if storage.basename(bare) in ("saved_model.pb", "saved_model.pbtxt"):
        return "saved_model"
    if bare.endswith((".pb", ".pbtxt")):
        return "frozen_graph"
    if _CKPT_FILE.search(bare) or storage.exists(bare + ".index") or \
            storage.exists(bare + ".meta"):
        return "checkpoint"
    if not storage.exists(bare):
        raise InputError(f"{path}: no such file or directory; expected {EXPECTED}")
    raise InputError(f"{path}: not a model graphfreeze knows; expected {EXPECTED}")


def load(request):
    """The LoadedModel for a Request (its `kind` given, or detected)."""
    kind = resolve_kind(request)
    if kind == "checkpoint":
        from graphfreeze.sources.checkpoint import CheckpointModel

        return CheckpointModel(request.source, request.meta, request.step)
    if kind == "saved_model":
        from graphfreeze.sources import saved_model

        return saved_model.load(saved_model_dir(request.source), request.tag, request.signature)
    if kind == "keras":
        from graphfreeze.sources import keras_model

        return keras_model.load(request.source, request.custom_objects, request.unsafe)
    from graphfreeze.sources import frozen

    return frozen.load(request.source)


def resolve_kind(request) -> str:
    return detect(request.source) if request.kind == "auto" else request.kind


def saved_model_dir(path: str) -> str:
    bare = path.rstrip("/")
    return storage.dirname(bare) if storage.basename(bare).startswith("saved_model.") else bare


def stem(request) -> str:
    """What artifact names start with (they go beside the source): `DIR/model.ckpt-200` for a
    checkpoint, `export/1` for a SavedModel dir, `model` for model.h5, `model.optimized` for a
    frozen model.pb (never the input's own name)."""
    kind = resolve_kind(request)
    if kind == "checkpoint":
        from graphfreeze.sources.checkpoint import locate

        return locate(request.source, request.meta, request.step).prefix
    if kind == "saved_model":
        return saved_model_dir(request.source)
    base = re.sub(r"\.(keras|h5|hdf5|pb|pbtxt)$", "", request.source)
    return base + ".optimized" if kind == "frozen_graph" else base
