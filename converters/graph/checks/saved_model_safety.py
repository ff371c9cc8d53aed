"""A SavedModel checked before `tf.saved_model.load` runs anything of it: assets stay inside
the model directory, and nothing loading runs touches the host except restores of the saver's
own file (safety.py has the op list and the graph checks). Graph nodes that neither loading
nor a signature runs (a training Saver left in a TF1 graph) are not refused."""

from __future__ import annotations

import os
import posixpath
import re

from graphfreeze.errors import InputError
from graphfreeze.graph.checks.safety import Library, host_ops, refusal
from graphfreeze.graph.graphdefs import nodes_by_name, reachable, split_tensor

CHECKPOINT_OPS = {"SaveV2", "Save", "SaveSlices", "RestoreV2", "Restore", "RestoreSlice",
                  "MergeV2Checkpoints"}
RESTORE_OPS = {"RestoreV2", "Restore", "RestoreSlice"}


def check_saved_model(meta_graph_def, model_dir: str, where: str) -> None:
    """Before `tf.saved_model.load`: assets stay inside `model_dir`, and no graph node or library
    function holds a host op, except the checkpoint ops of the SavedModel's own saver (its
    restore reads the prefix the loader feeds; graph-level ones must take the saver's filename).
    TF1 table initializers reading an asset tensor are allowed (assets are checked)."""
    check_assets(meta_graph_def, model_dir, where)
    graph_def = meta_graph_def.graph_def
    by_name = nodes_by_name(graph_def)
    saver = meta_graph_def.saver_def if meta_graph_def.HasField("saver_def") else None
    saver_nodes, restoring = set(), set()
    if saver:
        roots = [split_tensor(t)[0] for t in (saver.restore_op_name, saver.save_tensor_name)]
        saver_nodes = reachable(graph_def, [r for r in roots if r in by_name])
        restore = split_tensor(saver.restore_op_name)[0]
        restoring = reachable(graph_def, [restore]) if restore in by_name else set()
    strict = Library(graph_def.library)
    lenient = Library(graph_def.library, frozenset(CHECKPOINT_OPS))  # the save path: not run
    restores = Library(graph_def.library, frozenset(RESTORE_OPS))  # what loading runs
    assets = {split_tensor(a.tensor_info.name)[0] for a in _asset_defs(meta_graph_def)}
    runs = reachable(graph_def, _run_roots(meta_graph_def)) | saver_nodes \
        if meta_graph_def.signature_def else set(by_name)  # a checkpoint's: any may be run
    called = set()
    for node in graph_def.node:
        if node.name not in runs:
            continue  # never run: its callees are checked below as uncalled functions
        in_saver = node.name in saver_nodes
        if node.name in restoring and node.op in CHECKPOINT_OPS and (
                node.op not in RESTORE_OPS or not _from_saver_file(
                    by_name, node, split_tensor(saver.filename_tensor_name)[0])):
            raise refusal(where, (node.name, node.op, host_ops()[node.op] + " when the model "
                                   "loads, not a restore of the saver's own file", None))
        if not in_saver and _reads_asset(node, by_name, assets):
            continue
        library = restores if node.name in restoring else lenient if in_saver else strict
        hit = library.find(node)
        if hit:
            raise refusal(where, hit, node.name)
        if not in_saver:
            called |= set(strict.callees(node))
    saver_only = set()
    for name in saver_nodes - restoring:  # functions only the save path calls
        saver_only |= _closure(lenient, lenient.callees(by_name[name]))
    for name in restoring:  # functions loading runs: restores of the saver's file only
        for func in _closure(restores, restores.callees(by_name[name])):
            hit = restores.in_function(func)
            if hit:
                raise refusal(where, hit)
            saver_only.add(func)
    saver_only -= _closure(strict, called)
    for name in sorted(set(strict.funcs) - saver_only):  # uncalled ones too: load may run them
        hit = strict.in_function(name)
        if hit:
            raise refusal(where, hit)


INIT_COLLECTIONS = ("saved_model_main_op", "legacy_init_op", "table_initializer")


def _run_roots(meta_graph_def) -> list[str]:
    """What loading and serving may run besides the saver: every signature's tensors (the init
    op's signature too), the init op collections, local variables' initializers (TensorFlow's
    v1 loader runs these), as node names."""
    from graphfreeze.proto.tf import variable_pb2

    roots = []
    for signature in meta_graph_def.signature_def.values():
        for info in [*signature.inputs.values(), *signature.outputs.values()]:
            roots += _tensor_names(info)
    collections = meta_graph_def.collection_def
    for key in INIT_COLLECTIONS:
        if key in collections:
            roots += collections[key].node_list.value
    if "local_variables" in collections:
        for raw in collections["local_variables"].bytes_list.value:
            variable = variable_pb2.VariableDef.FromString(raw)
            roots += [variable.initializer_name, variable.snapshot_name]
    return [split_tensor(r)[0] for r in roots if r]


def _tensor_names(info) -> list[str]:
    if info.HasField("coo_sparse"):
        sparse = info.coo_sparse
        return [sparse.values_tensor_name, sparse.indices_tensor_name,
                sparse.dense_shape_tensor_name]
    if info.HasField("composite_tensor"):
        return [n for part in info.composite_tensor.components for n in _tensor_names(part)]
    return [info.name]


def _closure(library: Library, names) -> set[str]:
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            for node in library.funcs[name].node_def:
                todo.extend(library.callees(node))
    return seen


def _from_saver_file(by_name: dict, node, filename_node: str) -> bool:
    """Whether a restore op's prefix is the saver's filename tensor (through Identity only)."""
    if not node.input:
        return False
    source = split_tensor(node.input[0])[0]
    while source in by_name and by_name[source].op == "Identity" and source != filename_node:
        source = split_tensor(by_name[source].input[0])[0]
    return source == filename_node


def _reads_asset(node, by_name, assets: set[str]) -> bool:
    """A TF1 lookup-table initializer whose filename is an asset tensor (fed by the loader)."""
    if not node.op.startswith("InitializeTableFromTextFile") or len(node.input) < 2:
        return False
    source = split_tensor(node.input[1])[0]
    while source in by_name and by_name[source].op == "Identity":
        source = split_tensor(by_name[source].input[0])[0]
    return source in assets


def _asset_defs(meta_graph_def) -> list:
    from graphfreeze.proto.tf import meta_graph_pb2

    defs = list(meta_graph_def.asset_file_def)
    collection = meta_graph_def.collection_def.get("saved_model_assets")
    for value in collection.any_list.value if collection else ():
        asset = meta_graph_pb2.AssetFileDef()
        if value.Unpack(asset):
            defs.append(asset)
    return defs


def check_assets(meta_graph_def, model_dir: str, where: str) -> None:
    """Every asset file resolves inside `model_dir` (no `..`, absolute paths, or symlinks out)."""
    root = model_dir.rstrip("/")
    for asset in _asset_defs(meta_graph_def):
        name = asset.filename
        parts = re.split(r"[/\\]", name)
        bad = not name or name.startswith(("/", "\\")) or "://" in name or ".." in parts or \
            re.match(r"^[A-Za-z]:", name)
        if not bad and "://" not in root:
            real_root = os.path.realpath(root)
            real = os.path.realpath(os.path.join(root, "assets", name))
            bad = os.path.commonpath([real_root, real]) != real_root
        if bad:
            raise InputError(f"{where}: asset '{name}' resolves outside the model directory "
                             f"{posixpath.basename(root) or root}/; graphfreeze reads only the "
                             "model's own files; pass --unsafe if you trust this model")
