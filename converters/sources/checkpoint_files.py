"""Finding a TF1 checkpoint's files: the prefix (given, or the latest/--step in a model_dir),
its .index and every .data shard (V2), or the V1 file(s) (`SaverDef.V1`: the prefix itself, or
`PREFIX-00000-of-00002` shards, no .index), and the meta graph. No TensorFlow for local paths.
Listing the tensors (`read_index`, from the files without TensorFlow): a broken file is one
InputError line."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.checks.validate import check_graph_def
from graphfreeze.io import storage

CKPT_FILE = re.compile(r"\.(meta|index|data-\d{5}-of-\d{5})$")
V1_SHARDS = "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]"
V1_SHARD = re.compile(r"-(\d{5}|\?{5})-of-\d{5}$")  # a V1 shard, or the pattern Saver reports


@dataclass(frozen=True)
class CheckpointFiles:
    prefix: str
    meta: str


def locate(path: str, meta: str | None = None, step: int | None = None) -> CheckpointFiles:
    """Find the checkpoint prefix and meta graph for a prefix or model_dir path."""
    path = path.rstrip("/") if path != "/" else path
    # A prefix first: on object stores (and ram://) a prefix with files under it looks like a dir.
    if not CKPT_FILE.search(path) and not storage.exists(path + ".index") and \
            storage.isdir(path) and not v1_files(path):
        prefix = _prefix_in_dir(path, step)
    else:
        prefix = CKPT_FILE.sub("", path) if CKPT_FILE.search(path) else _v1_prefix(path)
        if step is not None:
            prefix = re.sub(r"-\d+$", "", prefix) + f"-{step}"
    _check_files(prefix)
    meta = meta or prefix + ".meta"
    if not storage.exists(meta):
        raise InputError(f"{meta}: meta graph not found; pass the graph with --meta PATH "
                         "(the .meta file tf.train.Saver writes beside the checkpoint)")
    return CheckpointFiles(prefix, meta)


def _prefix_in_dir(model_dir: str, step: int | None) -> str:
    state_file = storage.join(model_dir, "checkpoint")
    steps = _steps_in_dir(model_dir)
    if step is not None:
        if step not in steps:
            have = ", ".join(str(s) for s in sorted(steps)) or "none"
            raise InputError(f"{model_dir}: no checkpoint for step {step} (steps here: {have}); "
                             "pick one with --step N")
        return steps[step]
    if not storage.exists(state_file):
        if steps:
            latest = max(steps)
            return steps[latest]
        raise InputError(f"{model_dir}: no `checkpoint` state file and no model.ckpt-N.index; "
                         "pass a checkpoint prefix such as DIR/model.ckpt-200")
    named = _v1_prefix(_latest_in_state_file(state_file))
    # The state file may hold absolute paths from where training ran: prefer the file here.
    for candidate in (storage.join(model_dir, storage.basename(named)), named):
        if storage.exists(candidate + ".index") or v1_files(candidate):
            return candidate
    raise InputError(f"{state_file}: names {named}, which is not there; "
                     "pass an existing prefix or --step N")


def _steps_in_dir(model_dir: str) -> dict[int, str]:
    """Step -> prefix of each checkpoint here: V2 (`.index`) or V1 (a `.meta` beside the file)."""
    steps, names = {}, set(storage.listdir(model_dir))
    for name in names:
        match = re.fullmatch(r"(.+-(\d+))\.index", name) or \
            re.fullmatch(r"(.+-(\d+))\.meta", name)
        if match and (name.endswith(".index") or
                      v1_files(storage.join(model_dir, match.group(1)))):
            steps[int(match.group(2))] = storage.join(model_dir, match.group(1))
    return steps


def v1_files(prefix: str) -> list[str]:
    """The files of a V1 checkpoint at `prefix` (the file itself, or its shards); [] if none
    (a V2 checkpoint, with its .index, is not V1)."""
    if storage.exists(prefix + ".index") or storage.isdir(prefix):
        return []
    if storage.exists(prefix):
        return [prefix]
    return storage.glob(prefix, V1_SHARDS)


def _v1_prefix(path: str) -> str:
    """A V1 shard's (or the Saver's `-?????-of-N` pattern's) prefix; other paths as they are."""
    if V1_SHARD.search(path) and not storage.exists(path + ".index"):
        return V1_SHARD.sub("", path)
    return path


def reader_path(prefix: str) -> str:
    """What TensorFlow's checkpoint readers (NewCheckpointReader, RestoreV2) open for `prefix`:
    the prefix, or for a sharded V1 checkpoint the pattern naming its shards."""
    files = v1_files(prefix)
    if not files or files == [prefix]:
        return prefix
    return f"{prefix}-?????-of-{files[0].rsplit('-of-', 1)[1]}"


def _check_files(prefix: str) -> None:
    index = prefix + ".index"
    v1 = v1_files(prefix)
    if v1:
        _check_v1_shards(prefix, v1)
        return
    if not storage.exists(index):
        if storage.exists(prefix + ".meta") or storage.exists(prefix):
            raise InputError(f"{index}: checkpoint index not found; a checkpoint needs "
                             f"{storage.basename(prefix)}.index and .data-* files (a V1 "
                             f"checkpoint: the file {storage.basename(prefix)}) beside the .meta")
        raise InputError(f"{prefix}: no checkpoint with this prefix; pass e.g. DIR/model.ckpt-200 "
                         "or the model_dir")
    shards = storage.glob(prefix, ".data-*-of-*")
    if not shards:
        raise InputError(f"{prefix}.data-00000-of-00001: checkpoint data file not found; "
                         "copy all .data-* files beside the .index")
    total = int(shards[0].rsplit("-of-", 1)[1])
    for shard in range(total):
        name = f"{prefix}.data-{shard:05d}-of-{total:05d}"
        if name not in shards:
            raise InputError(f"{name}: checkpoint data shard missing; copy all {total} shards")


def _check_v1_shards(prefix: str, files: list[str]) -> None:
    if files == [prefix]:
        return
    total = int(files[0].rsplit("-of-", 1)[1])
    for shard in range(total):
        name = f"{prefix}-{shard:05d}-of-{total:05d}"
        if name not in files:
            raise InputError(f"{name}: checkpoint shard missing; copy all {total} shards")


def read_meta_graph(path: str, check: bool = True):
    """Parse a MetaGraphDef (binary or text); devices cleared; validated (`check`), else the
    caller validates what it reads."""
    from google.protobuf import message, text_format
    from graphfreeze.proto.stream import META_GRAPH_SPLIT
    from graphfreeze.proto.tf import meta_graph_pb2

    meta = meta_graph_pb2.MetaGraphDef()
    try:
        storage.read_proto(path, meta, META_GRAPH_SPLIT)
    except message.DecodeError:
        meta = meta_graph_pb2.MetaGraphDef()
        try:
            text_format.Parse(storage.read_bytes(path).decode("utf-8"), meta)
        except Exception as err:
            raise InputError(f"{path}: not a MetaGraphDef (cannot parse it); pass the .meta "
                             "file tf.train.Saver wrote with --meta PATH") from err
    if not meta.graph_def.node:
        raise InputError(f"{path}: holds no graph (not a .meta file written by tf.train.Saver?); "
                         "pass the right file with --meta PATH")
    for node in meta.graph_def.node:
        node.device = ""
    if check:
        check_graph_def(meta.graph_def, path)
    return meta


def _latest_in_state_file(state_file: str) -> str:
    """`model_checkpoint_path` from a `checkpoint` state file (a text CheckpointState proto)."""
    try:
        text = storage.read_bytes(state_file).decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{state_file}: unreadable checkpoint state file ({err}); "
                         "pass the checkpoint prefix instead") from err
    match = re.search(r'^model_checkpoint_path:\s*"((?:[^"\\]|\\.)*)"', text, re.MULTILINE)
    if not match or not match.group(1):
        raise InputError(f"{state_file}: names no checkpoint; pass the prefix with --ckpt")
    return match.group(1)


def unreadable_index(prefix: str, err: BaseException) -> InputError:
    v1 = v1_files(prefix)
    where = v1[0] if v1 else f"{prefix}.index"
    return InputError(f"{where}: not a readable checkpoint {'' if v1 else 'index '}"
                      f"({first_line(err)}); "
                      "the file is truncated or corrupt, re-save or re-copy the checkpoint")


def read_index(prefix: str) -> list[dict]:
    """checkpoint_variables, a broken index an InputError."""
    return _index_read(checkpoint_variables, prefix)


def check_shards(prefix: str) -> None:
    """A V2 checkpoint whole (`Bundle.check_shards`: its index read, each data shard as long as
    the index says), without reading a tensor; a fault an InputError naming the file."""
    from graphfreeze.proto.bundle import Bundle, BundleError

    bundle = _index_read(Bundle, prefix)
    try:
        bundle.check_shards()
    except BundleError as err:
        raise InputError(f"{err}; re-save or re-copy the checkpoint") from err


def _index_read(read, prefix: str):
    from graphfreeze.proto.bundle import BundleError

    try:
        return read(prefix)
    except InputError:
        raise
    except BundleError as err:  # names the file and what is wrong
        raise InputError(f"{err}; the file is truncated or corrupt, re-save or re-copy the "
                         "checkpoint") from err
    except Exception as err:  # TensorFlow's OpError, IndexError, ... on corrupt index files
        raise unreadable_index(prefix, err) from err


def read_bundle(bundle, prefix: str, specs: list):
    """(node, value) of each VariableSpec, as RestoreV2 restores it, read from the V2 `bundle`."""
    from graphfreeze.proto import dtypes
    from graphfreeze.proto.bundle import BundleError

    for spec in specs:
        entry = bundle.entries[spec.key]
        if entry.dtype != spec.dtype:
            raise InputError(f"{prefix}.index: variable {spec.key} is saved as "
                             f"{dtypes.name(entry.dtype)} but the graph reads it as "
                             f"{dtypes.name(spec.dtype)}; use the .meta and checkpoint from the "
                             "same run")
        try:
            value = bundle.read(spec.key)
        except BundleError as err:
            raise InputError(f"{prefix}.data-*: cannot read variable {spec.key} ({err}); the "
                             "checkpoint is truncated or corrupt, re-save or re-copy it") from err
        yield spec.node, value


def checkpoint_variables(prefix: str) -> list[dict]:
    """name, shape, dtype and bytes of each tensor of the checkpoint at `prefix`, read without
    TensorFlow (V2: its index; V1: each file's meta entry); BundleError if a file is broken."""
    from graphfreeze.proto import dtypes

    v1 = v1_files(prefix)
    if v1:
        from graphfreeze.proto.slices import v1_variables

        found = {n: (shape, dtypes.name(dtype), _count(shape) * dtypes.itemsize(dtype))
                 for n, (shape, dtype) in v1_variables(v1).items()}
    else:
        from graphfreeze.proto.bundle import Bundle

        entries = Bundle(prefix).entries
        found = {n: (list(e.shape), dtypes.name(e.dtype), e.count * dtypes.itemsize(e.dtype))
                 for n, e in entries.items()}
    return [{"name": name, "shape": shape, "dtype": dtype, "bytes": size}
            for name, (shape, dtype, size) in sorted(found.items())
            if not name.endswith("/.ATTRIBUTES/OBJECT_CONFIG_JSON") and
            name != "_CHECKPOINTABLE_OBJECT_GRAPH"]


def spec_bytes(spec) -> int:
    """A VariableSpec's bytes, by its declared shape (4 an element of an unknown dtype)."""
    from graphfreeze.proto.dtypes import itemsize

    return _count(spec.shape or ()) * (itemsize(spec.dtype) or 4)


def _count(shape: list[int]) -> int:
    total = 1
    for d in shape:
        total *= d
    return total


def _tensorflow_variables(prefix: str) -> dict:
    """checkpoint_variables' rows as TensorFlow's reader gives them (what tests compare with)."""
    import numpy as np
    import tensorflow as tf

    reader = tf.compat.v1.train.NewCheckpointReader(prefix)  # no dir check (ram://, gs://)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    out = {}
    for name, shape in shapes.items():
        shape, dtype = [int(d) for d in shape], dtypes[name]
        out[name] = (shape, dtype.name,
                     int(np.prod(shape)) * (dtype.size if dtype != tf.string else 0))
    return out


def needed_bytes(files: CheckpointFiles, outputs, inputs=()) -> int | None:
    """The bytes of the variables `outputs` reach in the meta graph (not past `inputs`), as the
    index records each (else as the graph declares it), no tensor read: what a frozen graph of
    them holds. None when a name is not a node or a file does not read (the run says why)."""
    from graphfreeze.graph.graphdefs import nodes_by_name, reachable, split_tensor
    from graphfreeze.graph.ops import VARIABLE_OPS
    from graphfreeze.proto import dtypes

    try:
        graph_def = read_meta_graph(files.meta, check=False).graph_def
        stored = {row["name"]: row["bytes"] for row in read_index(files.prefix)}
    except InputError:
        return None
    nodes = nodes_by_name(graph_def)
    roots = [split_tensor(name)[0] for name in outputs]
    cuts = [split_tensor(name.split("[", 1)[0])[0] for name in inputs]  # (x[1,4]: a shape)
    if not roots or any(node not in nodes for node in roots + cuts):
        return None
    total = 0
    for name in reachable(graph_def, roots, cuts):
        node = nodes[name]
        if node.op in VARIABLE_OPS:
            shape = node.attr["shape"].shape
            declared = None if shape.unknown_rank else \
                _count([d.size for d in shape.dim]) * dtypes.itemsize(node.attr["dtype"].type)
            total += stored.get(name, declared if declared and declared > 0 else 0)
    return total
