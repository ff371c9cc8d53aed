"""TF1 Saver checkpoints: `PREFIX` (+ `PREFIX.meta`) or a model_dir with a `checkpoint` file.

Only the variables the outputs need are read, each straight from the checkpoint with RestoreV2
under the key and slice the graph's own Saver uses (so renamed, partitioned and sharded
variables all resolve as they do on restore).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.checks.validate import check_graph_def
from graphfreeze.graph.graphdefs import nodes_by_name, reachable, split_tensor
from graphfreeze.graph.ops import VARIABLE_OPS
from graphfreeze.graph.tables import TABLE_INIT
from graphfreeze.io import storage
from graphfreeze.options import option
from graphfreeze.plugins import Source
from graphfreeze.sources.base import VariableSpec
from graphfreeze.sources.checkpoint_files import (
    CKPT_FILE,
    V1_SHARD,
    check_shards,
    locate,
    needed_bytes,
    read_bundle,
    read_index,
    read_meta_graph,
    reader_path,
    spec_bytes,
    unreadable_index,
    v1_files,
)
from graphfreeze.sources.frozen import run_errors_said

READ_GROUP_BYTES = 16 * 2**20  # per RestoreV2 call: few calls, little held twice


def saver_variables(meta, where: str = "the meta graph") -> dict[str, VariableSpec]:
    """Variable node -> checkpoint key and slice, read off the graph's own restore ops (validated
    first); a restore op whose key, slice or dtype lists are shorter than its outputs used is an
    InputError."""
    graph_def = meta.graph_def
    by_name = nodes_by_name(graph_def)
    specs: dict[str, VariableSpec] = {}
    listed: dict[str, tuple[list[str], list[str]]] = {}
    root = split_tensor(meta.saver_def.restore_op_name)[0] if meta.HasField("saver_def") else ""
    check_graph_def(graph_def, where, [root] if root in by_name else None)  # what is read here
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
        if restore_name not in listed:  # one RestoreV2 restores many variables: read once
            listed[restore_name] = (_const_strings(by_name[split_tensor(restore.input[1])[0]]),
                                    _const_strings(by_name[split_tensor(restore.input[2])[0]]))
        keys, slices = listed[restore_name]
        dtypes = restore.attr["dtypes"].list.type
        if k >= min(len(keys), len(slices), len(dtypes)):
            raise InputError(f"{where}: node '{restore_name}' (RestoreV2) lists "
                             f"{min(len(keys), len(slices), len(dtypes))} tensor name(s), slice(s) "
                             f"or dtype(s) but '{node.name}' restores its output {k}; the meta "
                             "graph is corrupt, use the .meta saved with this checkpoint")
        var = split_tensor(node.input[0])[0]
        specs[var] = VariableSpec(var, keys[k], slices[k], dtypes[k],
                                  _var_shape(by_name.get(var)))
    for node in graph_def.node:
        if node.op in VARIABLE_OPS and node.name not in specs:
            specs[node.name] = VariableSpec(node.name, node.name, "", node.attr["dtype"].type,
                                            _var_shape(node))
    return specs


def _const_strings(node) -> list[str]:
    """A string Const's values (one value stands for all, as TensorFlow splats it)."""
    tensor = node.attr["value"].tensor
    values = [s.decode("utf-8", "replace") for s in tensor.string_val]
    count = 1
    for dim in tensor.tensor_shape.dim:
        count *= max(dim.size, 0)
    return values * count if len(values) == 1 and count > 1 else values


def _var_shape(node) -> tuple[int, ...] | None:
    if node is None or node.attr["shape"].shape.unknown_rank:
        return None
    return tuple(d.size for d in node.attr["shape"].shape.dim)


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
    values_owned = True  # each read_variables value is a fresh array (a read or RestoreV2's copy)
    validated = False  # (but for the saver's part, by saver_variables): the run checks the rest

    def __init__(self, path: str, meta: str | None = None, step: int | None = None):
        files = locate(path, meta, step)
        self.location = path
        self.prefix = files.prefix
        self.graph_file = files.meta
        self.meta_graph = read_meta_graph(files.meta, check=False)
        self.graph_def = self.meta_graph.graph_def
        self.variables = saver_variables(self.meta_graph, files.meta)
        self.default_inputs = self.default_outputs = None  # the user names them
        self.notes: dict = {}
        if any(n.name == TABLE_INIT for n in self.graph_def.node):  # (an Estimator's vocabulary
            self.notes["table_init"] = TABLE_INIT  # columns): run it before the outputs
        self._reader = None

    def __getstate__(self) -> dict:  # what run_reference needs, in verification's child
        return {**self.__dict__, "meta_graph": None, "graph_def": None, "_reader": None}

    def release(self) -> None:
        """Let the meta graph go (sources/base.LoadedModel); the reader stays."""
        self.meta_graph = self.graph_def = None

    def _bundle(self):
        """The V2 checkpoint read without TensorFlow (None: a V1 checkpoint, read by it)."""
        if self._reader is None and not v1_files(self.prefix):
            from graphfreeze.proto.bundle import Bundle, BundleError

            try:
                self._reader = Bundle(self.prefix)
            except BundleError as err:
                raise InputError(f"{err}; the file is truncated or corrupt, re-save or re-copy "
                                 "the checkpoint") from err
        return self._reader

    def _shapes(self) -> dict[str, tuple[int, ...]]:
        """Checkpoint key -> shape, as TensorFlow's reader lists them."""
        bundle = self._bundle()
        if bundle is not None:
            return {name: entry.shape for name, entry in bundle.entries.items()}
        import tensorflow as tf

        try:
            reader = tf.compat.v1.train.NewCheckpointReader(reader_path(self.prefix))
            return reader.get_variable_to_shape_map()
        except Exception as err:  # a corrupt index can open and still fail here
            raise unreadable_index(self.prefix, err) from err

    def check_variables(self, nodes: list[str]) -> None:
        """Every needed variable is in the checkpoint with the shape the graph expects; all
        disagreements are counted and the first few named."""
        shapes = self._shapes()
        missing, mismatched = [], []
        for node in nodes:
            spec = self.variables[node]
            if spec.key not in shapes:
                missing.append((node, spec.key))
                continue
            want = _slice_shape(spec, tuple(shapes[spec.key]))
            if spec.shape is not None and tuple(spec.shape) != want:
                mismatched.append(f"'{node}' {list(spec.shape)} vs {list(want)}")
        meta, ckpt = storage.basename(self.graph_file), storage.basename(self.prefix)
        if missing:
            node, key = missing[0]
            close = [k for k in shapes if k.endswith(node.rsplit("/", 1)[-1])][:3]
            hint = f" (checkpoint has {', '.join(close)})" if close else ""
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise InputError(f"variable '{node}': key '{key}' not in checkpoint "
                             f"{self.prefix}{hint}{more}; use the .meta saved with this checkpoint")
        if mismatched:
            raise InputError(
                f"{len(mismatched)} variable(s) of meta graph {meta} are shaped unlike checkpoint "
                f"{ckpt} (graph vs checkpoint): {', '.join(mismatched[:3])}"
                f"{', ...' if len(mismatched) > 3 else ''}; use the .meta and checkpoint from "
                "the same run")

    def read_variables(self, nodes: list[str]):
        """(node, numpy value) for each node, read a few MB per RestoreV2 call."""
        group: list[VariableSpec] = []
        size = 0
        for node in nodes:
            spec = self.variables[node]
            group.append(spec)
            size += spec_bytes(spec)
            if size >= READ_GROUP_BYTES:
                yield from self._restore(group)
                group, size = [], 0
        if group:
            yield from self._restore(group)

    def _restore(self, specs: list[VariableSpec]):
        bundle = self._bundle()
        if bundle is not None and all(not s.slice and s.key in bundle.entries and
                                      not bundle.entries[s.key].sliced for s in specs):
            yield from read_bundle(bundle, self.prefix, specs)
            return
        import tensorflow as tf

        try:
            values = list(tf.raw_ops.RestoreV2(prefix=reader_path(self.prefix),
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
            yield spec.node, value

    def run_reference(self, graph_def, feeds: dict, fetches: list[str]) -> list:
        """Import `graph_def`, restore its variables from the checkpoint, run `fetches`."""
        from graphfreeze.graph.session import run_graph_def
        from graphfreeze.sources.checkpoint_restore import restoring

        graph_def, assigns = restoring(graph_def, self.variables, reader_path(self.prefix))
        with run_errors_said(self.graph_file):
            return run_graph_def(graph_def, feeds, fetches, first=assigns)


@dataclass(frozen=True)
class CheckpointOptions:
    meta: str | None = option(None, flag="--meta", path=True, metavar="PATH",
                              help="Meta graph file (default: PREFIX.meta).")
    step: int | None = option(None, flag="--step", metavar="N",
                              help="Checkpoint step in a model_dir.")


class CheckpointSource(Source):
    name = "checkpoint"
    summary = "TF1 Saver checkpoint: PREFIX (model.ckpt-N.index + .meta) or a model_dir"
    flag = "--ckpt"
    options = CheckpointOptions
    order = 10
    floor = True

    def detect(self, path: str) -> bool:
        bare = path.rstrip("/") or path
        if storage.exists(bare + ".index"):  # a prefix (may look like a dir remotely)
            return True
        if storage.isdir(bare):
            names = set(storage.listdir(bare))
            return not {"saved_model.pb", "saved_model.pbtxt"} & names and (
                "checkpoint" in names or any(n.endswith(".index") for n in names))
        return bool(CKPT_FILE.search(bare)) or storage.exists(bare + ".meta") or \
            bool(V1_SHARD.search(bare)) and storage.exists(V1_SHARD.sub("", bare) + ".meta")

    def stem(self, path: str, options: CheckpointOptions) -> str:
        return locate(path, options.meta, options.step).prefix

    def load(self, path: str, options: CheckpointOptions, unsafe: bool):
        return CheckpointModel(path, options.meta, options.step)

    def weight_bytes(self, path: str, options: CheckpointOptions, outputs, inputs=()):
        return needed_bytes(locate(path, options.meta, options.step), outputs, inputs)

    def files(self, path: str, options: CheckpointOptions) -> list[str]:
        found = locate(path, options.meta, options.step)
        state = storage.join(path.rstrip("/"), "checkpoint")
        v1 = v1_files(found.prefix)
        ckpt = v1 or [*storage.glob(found.prefix, ".data-*"), found.prefix + ".index"]
        return [*ckpt, found.meta,
                *([state] if storage.isdir(path.rstrip("/")) and storage.exists(state) else [])]

    def kept(self, path: str, options: CheckpointOptions) -> list[str]:
        """The folder's state file, read by tf.train.latest_checkpoint and training's next save
        (not by a load of a prefix)."""
        state = storage.join(storage.dirname(locate(path, options.meta, options.step).prefix),
                             "checkpoint")
        return [state] if storage.exists(state) else []

    def scan(self, path: str, options: CheckpointOptions) -> list[InputError]:
        """The meta graph (validated as it is read), as a SavedModel's: host ops, assets; and the
        V2 checkpoint whole (its index read, each data shard as long as the index says)."""
        from graphfreeze.graph.checks.saved_model_safety import check_saved_model
        from graphfreeze.sources.base import faults

        found = locate(path, options.meta, options.step)
        return faults(check_saved_model, read_meta_graph(found.meta), storage.dirname(found.meta),
                      found.meta) + ([] if v1_files(found.prefix) else
                                     faults(check_shards, found.prefix))

    def describe(self, path: str, options: CheckpointOptions, unsafe: bool) -> dict:
        from graphfreeze.graph.graphdefs import op_counts
        from graphfreeze.sources.describe import likely_io, total_size

        files = locate(path, options.meta, options.step)
        graph_def = read_meta_graph(files.meta).graph_def
        data = (v1_files(files.prefix) or
                storage.glob(files.prefix, ".data-*") + [files.prefix + ".index"]) + [files.meta]
        return {"files": {"prefix": files.prefix, "meta": files.meta},
                "size_bytes": total_size(data), "variables": read_index(files.prefix),
                "signatures": [], **likely_io(graph_def),
                "op_counts": op_counts(graph_def, functions=True), "graph": graph_def}


SOURCE = CheckpointSource()
