"""Read the user's data for a model's inputs: an `.npz` (one array per input, named like the
input, or the only array; `labels` optional), a folder of `.npy`/`.npz` files (one per input, or
one per sample) or a folder of images (`images.py`). Every array is checked against the input it
feeds (rank, known dims, dtype kind) and every error names the file, the array and the input."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

from graphfreeze.errors import InputError
from graphfreeze.io import storage

ARRAYS = (".npz", ".npy")
IMAGES = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
LABELS = "labels"


@dataclass(frozen=True)
class Dataset:
    """Inputs by tensor name ([N, ...] each), labels ([N] class indices) and class names."""

    inputs: dict
    labels: object = None
    classes: tuple[str, ...] | None = None
    where: str = ""

    @property
    def count(self) -> int:
        return len(next(iter(self.inputs.values()))) if self.inputs else 0

    def rows(self, start: int, stop: int) -> dict:
        return {name: value[start:stop] for name, value in self.inputs.items()}

    def samples(self, names: list[str], limit: int | None = None) -> list[list]:
        """One sample per row (batch 1), arrays in `names` order: a representative dataset."""
        count = self.count if limit is None else min(limit, self.count)
        return [[self.inputs[n][k:k + 1] for n in names] for k in range(count)]


def load(path: str, infos, scaling) -> Dataset:
    """The data at `path` for inputs `infos` (TensorInfo), images scaled by `scaling`."""
    if not storage.exists(path):
        raise InputError(f"{path}: not found; give an .npz, a folder of .npy/.npz files or a "
                         "folder of images")
    if not storage.isdir(path):
        return _checked(read_arrays(path), infos, path)
    files = [(full, rel) for full, rel in storage.tree_files(path)
             if not os.path.basename(rel).startswith(".")]
    images = [(f, r) for f, r in files if r.lower().endswith(IMAGES)]
    arrays = [f for f, r in files if r.lower().endswith(ARRAYS)]
    if images and arrays:  # one of the two would be left out
        raise InputError(f"{path}: holds images ({images[0][1]}) and arrays "
                         f"({os.path.relpath(arrays[0], path)}); keep one kind in the folder")
    if images:
        from graphfreeze.data.images import read_images

        x, labels, classes = read_images(path, images, infos, scaling)
        return Dataset({infos[0].name: x}, labels, classes, path)
    if not arrays:
        raise InputError(f"{path}: an empty folder (no .npz, .npy or image files: "
                         f"{', '.join(IMAGES)}); put your samples there")
    return _checked(_folder_arrays(arrays, infos, path), infos, path)


def read_arrays(path: str, fix: str = "save one with numpy.savez") -> dict:
    """{name: array} of one .npz, or {"": array} of one .npy; one numpy cannot read (another
    kind of file, truncated, object arrays) is an InputError naming it, then `fix`."""
    import zipfile
    import zlib

    import numpy as np

    try:
        loaded = np.load(io.BytesIO(storage.read_bytes(path)), allow_pickle=False)
        return dict(loaded) if hasattr(loaded, "files") else {"": loaded}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        why = " ".join(str(err).split())
        if "allow_pickle" in why:  # numpy's advice to unpickle an untrusted file: not ours
            why = "object arrays, which graphfreeze never unpickles" if "Object arrays" in why \
                else "numpy would have to unpickle it, which graphfreeze never does"
        raise InputError(f"{path}: not an .npz or .npy file numpy reads ({why}); {fix}") from err


def _folder_arrays(paths: list[str], infos, folder: str) -> dict:
    """A folder of files: `.npy` named after the inputs (and `labels.npy`), or one file per
    sample (or batch), concatenated in name order."""
    import numpy as np

    stems = {os.path.splitext(os.path.basename(p))[0]: p for p in paths}
    wanted = {_node(i.name) for i in infos} | {LABELS}
    if all(p.endswith(".npy") for p in paths) and set(stems) <= wanted and len(stems) > 1:
        return {stem: read_arrays(p)[""] for stem, p in stems.items()}
    parts = [read_arrays(p) for p in paths]
    keys = set(parts[0])
    for path, part in zip(paths, parts, strict=True):
        if set(part) != keys:
            raise InputError(f"{path}: holds {', '.join(sorted(part)) or 'one array'}, but "
                             f"{paths[0]} holds {', '.join(sorted(keys)) or 'one array'}; give "
                             "every file the same arrays")
    infos_by = {_node(i.name): i for i in infos}
    merged = {}
    for key in keys:
        info = infos_by.get(key) or (infos[0] if len(infos) == 1 and key != LABELS else None)
        rank = None if info is None or info.shape is None else len(info.shape)
        merged[key] = np.concatenate([p[key][None] if rank and p[key].ndim == rank - 1 or
                                      key == LABELS and p[key].ndim == 0 else p[key]
                                      for p in parts])
    return merged


def _node(name: str) -> str:
    return name.rsplit(":", 1)[0]


def _checked(arrays: dict, infos, where: str) -> Dataset:
    """Arrays matched to inputs (by tensor name, node name, or the only array) and checked."""
    labels = arrays.pop(LABELS, None)
    inputs = {}
    for info in infos:
        node = _node(info.name)
        key = next((k for k in (info.name, node, node.replace("/", "_")) if k in arrays), None)
        if key is None and len(infos) == 1 and len(arrays) == 1:
            key = next(iter(arrays))
        if key is None:
            has = ", ".join(sorted(k or "(one unnamed array)" for k in arrays)) or "no arrays"
            raise InputError(f"{where}: no array for input '{node}' (has: {has}); name each "
                             "array after its input")
        inputs[info.name] = fit(arrays[key], info, f"{where}: array '{key or node}'")
    ragged = {i.name for i in infos if getattr(i.domain, "splits_of", None)}
    ragged |= {i.domain.splits_of for i in infos if i.name in ragged}
    splits = [i for i in infos if i.name in ragged and getattr(i.domain, "splits_of", None)]
    for info in splits:  # each level splits the next one, the last the values
        inner = next((inputs[i.name][:-1] for i in splits if i.domain.splits_of ==
                      info.domain.splits_of and i.domain.level == info.domain.level + 1),
                     inputs.get(info.domain.splits_of))
        check_splits(inputs[info.name], inner, info, where)
    counts = {len(v) for n, v in inputs.items() if n not in ragged} or \
        {len(inputs[i.name]) - 1 for i in splits if i.domain.level == 1}
    if len(counts) > 1:
        raise InputError(f"{where}: the inputs' arrays have different numbers of rows "
                         f"({', '.join(f'{n}: {len(v)}' for n, v in inputs.items())})")
    if inputs and not next(iter(counts)):
        raise InputError(f"{where}: holds no samples (0 rows)")
    return Dataset(inputs, None if labels is None else class_labels(labels, counts, where),
                   None, where)


def fit(value, info, what: str):
    """`value` as input `info` takes it: a missing batch dim added, dtype cast within its kind."""
    import numpy as np

    shown = "[" + ",".join("?" if d is None else str(d) for d in info.shape or ()) + "]"
    if info.shape is not None:
        if value.ndim == len(info.shape) - 1:
            value = value[None]
        if value.ndim != len(info.shape) or any(
                d is not None and d != v for d, v in zip(info.shape[1:], value.shape[1:],
                                                         strict=True)):
            raise InputError(f"{what} has shape {list(value.shape)}, but input '{info.name}' "
                             f"takes {shown} (? = any); save it in that shape")
    if info.dtype == "string":
        return strings(value, info, what)
    want = np.dtype(info.dtype)
    ok = {"f": "fiu", "i": "iub", "u": "iub", "b": "b"}.get(want.kind, want.kind)
    if value.dtype.kind not in ok:
        raise InputError(f"{what} has dtype {value.dtype}, but input '{info.name}' takes "
                         f"{info.dtype}; save it as {info.dtype}")
    vocabulary = getattr(info.domain, "vocabulary", None)
    if vocabulary and want.kind in "iu" and value.size and \
            (value.min() < 0 or value.max() >= vocabulary):
        bad = value.max() if value.max() >= vocabulary else value.min()
        raise InputError(f"{what} has token id {bad}, but input '{info.name}' indexes a "
                         f"vocabulary of {vocabulary} (ids 0..{vocabulary - 1}); give ids "
                         "within it")
    return value.astype(want, copy=False)


def strings(value, info, what: str):
    """A string input's array (numpy bytes `|S` or unicode `<U`, as an .npz stores strings)
    as the bytes TensorFlow takes; bytes that are not UTF-8 refused where the model decodes
    UTF-8."""
    import numpy as np

    if value.dtype.kind not in "SU":
        raise InputError(f"{what} has dtype {value.dtype}, but input '{info.name}' takes "
                         "strings; save it as a numpy string array (numpy.array(['a', 'b']))")
    if value.dtype.kind == "U":
        return np.array([s.encode("utf-8") for s in value.reshape(-1)],
                        dtype=object).reshape(value.shape)
    out = np.array(value.reshape(-1).tolist(), dtype=object).reshape(value.shape)
    decoder = getattr(info.domain, "utf8", None)
    if decoder:
        for k, item in enumerate(out.reshape(-1)):
            try:
                item.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(f"{what}: string {k} ({item[:20]!r}) is not UTF-8, but input "
                                 f"'{info.name}' is decoded as UTF-8 by node '{decoder}'; save "
                                 "the strings UTF-8 encoded (a numpy '<U' array)") from err
    return out


def check_splits(splits, values, info, where: str) -> None:
    """A ragged input's row splits: from 0, never decreasing, up to its values' length."""
    import numpy as np

    total = 0 if values is None else len(values)
    if splits.ndim != 1 or len(splits) < 1 or splits[0] != 0 or np.any(np.diff(splits) < 0) \
            or splits[-1] != total:
        raise InputError(f"{where}: array for '{info.name}' must be the row splits of ragged "
                         f"input '{info.domain.splits_of}': [0, ..., {total}], never "
                         "decreasing (tf.RaggedTensor.row_splits)")


def class_labels(labels, counts: set, where: str):
    """`labels` as class indices: [N] integers, or one-hot / scores [N, C] (arg-max)."""
    import numpy as np

    labels = np.asarray(labels)
    if labels.ndim == 2:
        labels = labels.argmax(axis=-1)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise InputError(f"{where}: 'labels' must be class indices [N] (integers) or one-hot "
                         f"[N, classes], got {labels.dtype} {list(labels.shape)}")
    if counts and len(labels) != next(iter(counts)):
        raise InputError(f"{where}: {len(labels)} labels for {next(iter(counts))} samples")
    return labels.astype(np.int64)
