"""TF1 Saver checkpoints: `PREFIX` (+ `PREFIX.meta`) or a model_dir with a `checkpoint` file.

Only the variables the outputs need are read, each straight from the checkpoint with RestoreV2
under the key and slice the graph's own Saver uses (so renamed, partitioned and sharded
variables all resolve as they do on restore).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphfreeze import storage
from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.graphdefs import nodes_by_name, reachable, split_tensor
from graphfreeze.sources.base import VARIABLE_OPS, ReadStats, VariableSpec

READ_GROUP_BYTES = 16 * 2**20  # per RestoreV2 call: few calls, little held twice
_SUFFIXES = re.compile(r"\.(meta|index|data-\d{5}-of-\d{5})$")


@dataclass(frozen=True)
class CheckpointFiles:
    prefix: str
    meta: str


def locate(path: str, meta: str | None = None, step: int | None = None) -> CheckpointFiles:
    """Find the checkpoint prefix and meta graph for a prefix or model_dir path."""
    path = path.rstrip("/") if path != "/" else path
    # A prefix first: on object stores (and ram://) a prefix with files under it looks like a dir.
    if not _SUFFIXES.search(path) and not storage.exists(path + ".index") and \
            storage.isdir(path):
        prefix = _prefix_in_dir(path, step)
    else:
        prefix = _SUFFIXES.sub("", path)
        if step is not None:
            prefix = re.sub(r"-\d+$", "", prefix) + f"-{step}"
    _check_files(prefix)
    meta = meta or prefix + ".meta"
    if not storage.exists(meta):
        raise InputError(f"{meta}: meta graph not found; pass the graph with --meta PATH "
                         "(the .meta file tf.train.Saver writes beside the checkpoint)")
    return CheckpointFiles(prefix, meta)


def _prefix_in_dir(model_dir: str, step: int | None) -> str:
    import tensorflow as tf

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
    try:
        state = tf.train.get_checkpoint_state(model_dir)
    except Exception as err:
        raise InputError(f"{state_file}: unreadable checkpoint state file ({err}); "
                         "pass the checkpoint prefix instead") from err
    if state is None or not state.model_checkpoint_path:
        raise InputError(f"{state_file}: names no checkpoint; pass the prefix with --ckpt")
    named = state.model_checkpoint_path
    # The state file may hold absolute paths from where training ran: prefer the file here.
    for candidate in (storage.join(model_dir, storage.basename(named)), named):
        if storage.exists(candidate + ".index"):
            return candidate
    raise InputError(f"{state_file}: names {named}, which is not there; "
                     "pass an existing prefix or --step N")


def _steps_in_dir(model_dir: str) -> dict[int, str]:
    steps = {}
    for name in storage.listdir(model_dir):
        match = re.fullmatch(r"(.+-(\d+))\.index", name)
        if match:
            steps[int(match.group(2))] = storage.join(model_dir, match.group(1))
    return steps


def _check_files(prefix: str) -> None:
    index = prefix + ".index"
    if not storage.exists(index):
        if storage.exists(prefix + ".meta") or storage.exists(prefix):
            raise InputError(f"{index}: checkpoint index not found; a checkpoint needs "
                             f"{storage.basename(prefix)}.index and .data-* files beside the .meta")
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


def read_meta_graph(path: str):
    """Parse a MetaGraphDef (binary or text); devices cleared."""
    from google.protobuf import message, text_format
    from tensorflow.core.protobuf import meta_graph_pb2

    data = storage.read_bytes(path)
    meta = meta_graph_pb2.MetaGraphDef()
    try:
        meta.ParseFromString(data)
    except message.DecodeError:
        try:
            text_format.Parse(data.decode("utf-8"), meta)
        except Exception as err:
            raise InputError(f"{path}: not a MetaGraphDef (cannot parse it); pass the .meta "
                             "file tf.train.Saver wrote with --meta PATH") from err
    if not meta.graph_def.node:
        raise InputError(f"{path}: holds no graph (not a .meta file written by tf.train.Saver?); "
                         "pass the right file with --meta PATH")
    for node in meta.graph_def.node:
        node.device = ""
    return meta


def saver_variables(meta) -> dict[str, VariableSpec]:
    """Variable node -> checkpoint key and slice, read off the graph's own restore ops."""
    graph_def = meta.graph_def
    by_name = nodes_by_name(graph_def)
    specs: dict[str, VariableSpec] = {}
    root = split_tensor(meta.saver_def.restore_op_name)[0] if meta.HasField("saver_def") else ""
    restore_nodes = reachable(graph_def, [root]) if root in by_name else set(by_name)
    for name in sorted(restore_nodes):
        node = by_name[name]
        if node.op not in ("Assign", "AssignVariableOp") or len(node.input) < 2:
            continue
        source = node.input[1]
        while by_name.get(split_tensor(source)[0]) is not None and \
                by_name[split_tensor(source)[0]].op == "Identity":
            source = by_name[split_tensor(source)[0]].input[0]
        restore_name, k = split_tensor(source)
        restore = by_name.get(restore_name)
        if restore is None or restore.op not in ("RestoreV2", "RestoreSlice", "Restore"):
            continue
        if restore.op != "RestoreV2":
            continue  # very old V1 ops: fall back to node names below
        keys = _const_strings(by_name[split_tensor(restore.input[1])[0]])
        slices = _const_strings(by_name[split_tensor(restore.input[2])[0]])
        var = split_tensor(node.input[0])[0]
        specs[var] = VariableSpec(var, keys[k], slices[k], restore.attr["dtypes"].list.type[k],
                                  _var_shape(by_name.get(var)))
    for node in graph_def.node:
        if node.op in VARIABLE_OPS and node.name not in specs:
            specs[node.name] = VariableSpec(node.name, node.name, "", node.attr["dtype"].type,
                                            _var_shape(node))
    return specs


def _const_strings(node) -> list[str]:
    return [s.decode("utf-8") for s in node.attr["value"].tensor.string_val]


def _var_shape(node) -> tuple[int, ...] | None:
    if node is None or node.attr["shape"].shape.unknown_rank:
        return None
    return tuple(d.size for d in node.attr["shape"].shape.dim)


def _spec_bytes(spec: VariableSpec) -> int:
    import numpy as np

    count = int(np.prod(spec.shape)) if spec.shape else 1
    return count * _DTYPE_SIZES.get(spec.dtype, 4)


_DTYPE_SIZES = {1: 4, 2: 8, 3: 4, 9: 8, 19: 2, 14: 2, 4: 1, 6: 1, 10: 1}  # DataType enum: bytes


def _slice_shape(spec: VariableSpec, full: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of the part a 'd0 d1 off,len:off,len' slice spec selects ('-' = whole dim)."""
    if not spec.slice:
        return full
    extents = spec.slice.split(" ")[-1].split(":")
    return tuple(dim if ext == "-" else int(ext.split(",")[1])
                 for dim, ext in zip(full, extents, strict=True))


class CheckpointModel:
    """A Saver checkpoint plus its meta graph."""

    kind = "checkpoint"

    def __init__(self, path: str, meta: str | None = None, step: int | None = None):
        files = locate(path, meta, step)
        self.location = path
        self.prefix = files.prefix
        self.graph_file = files.meta
        self.meta_graph = read_meta_graph(files.meta)
        self.graph_def = self.meta_graph.graph_def
        self.variables = saver_variables(self.meta_graph)
        self.stats = ReadStats()
        self.memo: dict = {}  # results stages share across targets (the reference outputs)
        self.default_inputs = self.default_outputs = None  # the user names them
        self.notes: dict = {}
        self._reader = None

    def _checkpoint_reader(self):
        if self._reader is None:
            import tensorflow as tf

            try:
                self._reader = tf.compat.v1.train.NewCheckpointReader(self.prefix)
            except Exception as err:
                raise InputError(f"{self.prefix}.index: not a readable checkpoint index "
                                 f"({first_line(err)}); re-save the checkpoint") from err
        return self._reader

    def check_variables(self, nodes: list[str]) -> None:
        """Every needed variable is in the checkpoint with the shape the graph expects."""
        reader = self._checkpoint_reader()
        shapes = reader.get_variable_to_shape_map()
        for node in nodes:
            spec = self.variables[node]
            if spec.key not in shapes:
                hint = ""
                close = [k for k in shapes if k.endswith(node.rsplit("/", 1)[-1])][:3]
                if close:
                    hint = f" (checkpoint has {', '.join(close)})"
                raise InputError(f"variable '{node}': key '{spec.key}' not in checkpoint "
                                 f"{self.prefix}{hint}; use the .meta saved with this checkpoint")
            want = _slice_shape(spec, tuple(shapes[spec.key]))
            if spec.shape is not None and tuple(spec.shape) != want:
                raise InputError(
                    f"variable '{node}': meta graph {storage.basename(self.graph_file)} says shape "
                    f"{list(spec.shape)} but checkpoint {storage.basename(self.prefix)} has "
                    f"{list(want)}; use the .meta and checkpoint from the same run")

    def read_variable(self, node: str):
        """One variable's value (numpy), read with the Saver's key and slice."""
        return next(self.read_variables([node]))[1]

    def read_variables(self, nodes: list[str]):
        """(node, numpy value) for each node, read a few MB per RestoreV2 call."""
        group: list[VariableSpec] = []
        size = 0
        for node in nodes:
            spec = self.variables[node]
            group.append(spec)
            size += _spec_bytes(spec)
            if size >= READ_GROUP_BYTES:
                yield from self._restore(group)
                group, size = [], 0
        if group:
            yield from self._restore(group)

    def _restore(self, specs: list[VariableSpec]):
        import tensorflow as tf

        try:
            values = list(tf.raw_ops.RestoreV2(prefix=self.prefix,
                                               tensor_names=[s.key for s in specs],
                                               shape_and_slices=[s.slice for s in specs],
                                               dtypes=[s.dtype for s in specs]))
        except tf.errors.OpError as err:
            keys = ", ".join(s.key for s in specs[:3]) + (", ..." if len(specs) > 3 else "")
            raise InputError(
                f"{self.prefix}.data-*: cannot read variable {keys} "
                f"({first_line(err)}); the checkpoint is truncated or corrupt, re-save or "
                "re-copy it") from err
        for i, spec in enumerate(specs):
            value = values[i].numpy()
            values[i] = None  # let TensorFlow's copy go as soon as numpy has its own
            self.stats.variables_read += 1
            self.stats.bytes_read += value.nbytes
            yield spec.node, value

    def run_reference(self, graph_def, feeds: dict, fetches: list[str]) -> list:
        """Import `graph_def`, restore its variables from the checkpoint, run `fetches`."""
        import tensorflow as tf
        from graphfreeze.graph.session import lean_config

        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
            nodes = [n for n in graph_def.node if n.op in VARIABLE_OPS]
            specs = [self.variables[n.name] for n in nodes]
            values = tf.raw_ops.RestoreV2(prefix=self.prefix, tensor_names=[s.key for s in specs],
                                          shape_and_slices=[s.slice for s in specs],
                                          dtypes=[s.dtype for s in specs]) if specs else []
            restores = []
            for node, value in zip(nodes, values, strict=True):
                target = graph.get_tensor_by_name(node.name + ":0")
                if node.op == "VarHandleOp":
                    restores.append(tf.raw_ops.AssignVariableOp(resource=target, value=value))
                else:
                    restores.append(tf.raw_ops.Assign(ref=target, value=value))
        with tf.compat.v1.Session(graph=graph, config=lean_config()) as sess:
            sess.run(restores)
            return sess.run(fetches, feeds)
