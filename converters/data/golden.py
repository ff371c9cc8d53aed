"""Golden outputs: the inputs a run verified on and the original's outputs on them, saved to a
folder (`--save-golden DIR`) so a later run verifies an artifact against them without running
the original (`--golden DIR`): another machine, another TensorFlow, last month's model.

DIR/golden.npz holds `input:NAME`, `output:NAME` (and `labels`); DIR/golden.json what they are."""

from __future__ import annotations

import io
import json

from graphfreeze import __version__
from graphfreeze.data.load import read_arrays
from graphfreeze.errors import InputError
from graphfreeze.io import storage

ARRAYS, RECORD = "golden.npz", "golden.json"


def save(files, folder: str, feeds: dict, inputs, outputs, expected: list, labels=None,
         source: str = "") -> None:
    """Stage DIR/golden.npz and DIR/golden.json in the transaction `files` (written at commit)."""
    import numpy as np

    arrays = {f"input:{i.name}": _storable(feeds[i.name]) for i in inputs}
    arrays.update({f"output:{o.name}": _storable(value)
                   for o, value in zip(outputs, expected, strict=True)})
    if labels is not None:
        arrays["labels"] = labels
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    record = {"graphfreeze_version": __version__, "source": source,
              "rows": rows(feeds),
              "inputs": [i.as_json() for i in inputs], "outputs": [o.as_json() for o in outputs],
              "labels": labels is not None}
    files.put(storage.join(folder, ARRAYS), buffer.getvalue(), "--save-golden")
    files.put(storage.join(folder, RECORD),
              (json.dumps(record, indent=2, sort_keys=True) + "\n").encode(), "--save-golden")


def recorded_folder(artifact: str, recorded: str, unsafe: bool = False) -> str:
    """The golden folder an artifact's sidecar records (relative to the artifact's folder),
    resolved. The sidecar is untrusted: unless `unsafe`, only a relative path inside the folder
    that holds the artifact's folder (`-o out/ --save-golden golden` records `../golden`), not
    an absolute path, a URL (gs://: the user's credentials) or a deeper `..`; else InputError."""
    import os
    import posixpath
    import re

    if not unsafe and (re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", recorded) or "\\" in recorded or
                       os.path.isabs(recorded) or recorded.startswith("~") or
                       posixpath.normpath(recorded).split("/")[:2] == ["..", ".."]):
        raise InputError(f"{artifact}.json: the sidecar's golden folder {recorded!r} is not "
                         "beside the artifact; pass --golden DIR (or --unsafe to read it)")
    if storage.is_remote(recorded) or os.path.isabs(recorded):
        return recorded
    return os.path.normpath(os.path.join(os.path.dirname(artifact), recorded))


def rows(feeds: dict) -> int:
    """How many rows the inputs hold: the first dimension of the first that has one (scalars
    are one row; no inputs, none)."""
    return next((int(v.shape[0]) for v in feeds.values() if v.ndim), 1 if feeds else 0)


def _storable(value):
    """Strings (object arrays of bytes) as numpy bytes arrays: an .npz holds no objects."""
    import numpy as np

    return np.array(value.tolist(), dtype=bytes) if value.dtype == object else value


def _strings(value, info):
    """A string tensor's bytes array back as the object array TensorFlow gives."""
    import numpy as np

    if value is None or info.dtype != "string" or value.dtype.kind != "S":
        return value
    return np.array(value.reshape(-1).tolist(), dtype=object).reshape(value.shape)


def load(folder: str, inputs, outputs) -> tuple[dict, list, object]:
    """(feeds, expected outputs in `outputs` order, labels or None) from a golden folder; one
    made for another model names the first input or output that does not match."""

    path = storage.join(folder, ARRAYS)
    if not storage.exists(path):
        raise InputError(f"{folder}: no {ARRAYS} (not a golden folder); make one with "
                         "--save-golden DIR")
    arrays = read_arrays(path, "save it again with --save-golden")
    feeds = {}
    for info in inputs:
        value = _strings(arrays.get(f"input:{info.name}"), info)
        _check(value, info, "input", folder, sorted(k[6:] for k in arrays if k.startswith("input:")))
        feeds[info.name] = value
    expected = []
    for info in outputs:
        value = _strings(arrays.get(f"output:{info.name}"), info)
        _check(value, info, "output", folder, sorted(k[7:] for k in arrays if k.startswith("output:")))
        expected.append(value)
    rows = {len(v) for info, v in zip(inputs, feeds.values(), strict=True)
            if info.shape and v.ndim}  # (rank known, not a scalar; an output's first dimension
    if rows == {0} or len(rows) > 1:  # need not be rows: a detector's boxes)
        raise InputError(f"{path}: {'no rows' if rows == {0} else 'rows of ' + str(sorted(rows))}"
                         " (the inputs must have the same rows, at least one); save it again "
                         "with --save-golden")
    return feeds, expected, arrays.get("labels")


def _check(value, info, role: str, folder: str, has: list[str]) -> None:
    """`value` is what `info` takes (dtype, rank, known dims), else one line naming it."""
    if value is None:
        raise InputError(f"{folder}: golden outputs of another model: this model's {role} "
                         f"'{info.name}' is not in them (they have {', '.join(has) or 'none'}); "
                         "save new ones with --save-golden")
    shape = info.shape
    fits = (value.dtype.name == info.dtype or info.dtype == "string" and value.dtype == object) \
        and (shape is None or value.ndim == len(shape) and all(
        d is None or d == v for d, v in zip(shape[1:], value.shape[1:], strict=True)))
    if not fits:
        shown = "?" if shape is None else "[" + ",".join("?" if d is None else str(d)
                                                         for d in shape) + "]"
        raise InputError(f"{folder}: golden outputs of another model: {role} '{info.name}' is "
                         f"{info.dtype} {shown} here, {value.dtype} {list(value.shape)} in "
                         "them; save new ones with --save-golden")
