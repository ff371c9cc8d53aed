"""`freeze inspect`: what a model is, before converting it. Reads files; freezes nothing.

Everything comes from the files' own records: the checkpoint index (variables), the meta graph or
SavedModel protobuf (signatures, ops), the Keras model's config and weights, the GraphDef.
"""

from __future__ import annotations

import collections

from graphfreeze import names, storage
from graphfreeze.sources.detect import detect, saved_model_dir

SCHEMA_VERSION = 1


def inspect(path: str, kind: str = "auto", tag: str = "serve", meta: str | None = None,
            step: int | None = None) -> dict:
    """A JSON-ready report (stable keys, sorted) about the model at `path`."""
    path, meta = storage.expand(path), storage.expand(meta)
    kind = detect(path) if kind == "auto" else kind
    report = {"schema_version": SCHEMA_VERSION, "path": path, "kind": kind}
    if kind == "checkpoint":
        report.update(_checkpoint(path, meta, step))
    elif kind == "saved_model":
        report.update(_saved_model(saved_model_dir(path), tag))
    elif kind == "keras":
        report.update(_keras(path))
    else:
        report.update(_frozen(path))
    return report


def _size(paths: list[str]) -> int:
    total = 0
    for p in paths:
        if storage.isdir(p):
            import tensorflow as tf

            for root, _, files in tf.io.gfile.walk(p):
                total += sum(storage.size(storage.join(root, f)) for f in files)
        elif storage.exists(p):
            total += storage.size(p)
    return total


def checkpoint_variables(prefix: str) -> list[dict]:
    import numpy as np
    import tensorflow as tf

    reader = tf.compat.v1.train.NewCheckpointReader(prefix)  # no dir check (ram://, gs://)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    out = []
    for name in sorted(shapes):
        if name.endswith("/.ATTRIBUTES/OBJECT_CONFIG_JSON") or name == "_CHECKPOINTABLE_OBJECT_GRAPH":
            continue
        shape = [int(d) for d in shapes[name]]
        dtype = dtypes[name]
        size = int(np.prod(shape)) * (dtype.size if dtype != tf.string else 0)
        out.append({"name": name, "shape": shape, "dtype": dtype.name, "bytes": size})
    return out


def graph_tensors(graph_def, refs) -> list[dict]:
    """name, dtype, shape of tensors, from shape inference on the weightless graph."""
    from graphfreeze.graph.graphdefs import extract
    from graphfreeze.stages.export import tensor_infos

    try:
        infos = tensor_infos(extract(graph_def, [r.node for r in refs]), refs)
    except Exception:  # noqa: BLE001 -- a graph TF can't import still gets its names listed
        return [{"name": r.name, "dtype": None, "shape": None} for r in refs]
    return [{"name": i.name, "dtype": i.dtype, "shape": None if i.shape is None else list(i.shape)}
            for i in infos]


def _likely_io(graph_def) -> dict:
    """The likeliest output, the inputs it needs, the flags folded, other candidate outputs."""
    likely = names.likely_outputs(graph_def)
    outputs = [names.TensorRef(n) for n in likely[:1]]
    inputs = []
    if outputs:
        from graphfreeze.graph.graphdefs import reachable

        needed = reachable(graph_def, [o.node for o in outputs])
        flags = names.flag_nodes(graph_def, needed, set())
        inputs = names.default_inputs(graph_def, outputs, set(flags))
    else:
        flags = {}
    return {"inputs": graph_tensors(graph_def, inputs),
            "outputs": graph_tensors(graph_def, outputs),
            "other_outputs": likely[1:],
            "flags": {k: v for k, v in sorted(flags.items())}}


def op_counts(graph_def) -> dict:
    """Op types in the graph and the functions it calls."""
    counts = collections.Counter(n.op for n in graph_def.node)
    for func in graph_def.library.function:
        counts.update(n.op for n in func.node_def)
    return dict(sorted(counts.items()))


def target_gaps(graph_def, ops: set[str]) -> dict:
    """Per target, the op types it cannot take (tf2onnx's handler registry; a TFLite probe)."""
    compute = sorted(o for o in ops - _NOT_COMPUTE if not _training_op(o))
    from graphfreeze.stages.tflite import probe_ops

    return {"onnx": onnx_gaps(set(compute)), "tflite": probe_ops(graph_def, compute)}


_NOT_COMPUTE = {"Placeholder", "PlaceholderWithDefault", "Const", "Identity", "NoOp",
                "VariableV2", "VarHandleOp", "ReadVariableOp", "Assign", "AssignVariableOp",
                "RestoreV2", "SaveV2", "Switch", "Merge", "If", "StatelessIf", "While",
                "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall"}


def onnx_gaps(ops: set[str]) -> dict:
    """Ops tf2onnx has no handler for at the opset graphfreeze would use."""
    import tf2onnx.tfonnx  # noqa: F401 -- importing it registers every op handler
    from graphfreeze.stages.onnx_export import newest_opset
    from tf2onnx import handler

    opset = newest_opset()
    known = set()
    for domain_ops in handler.tf_op.get_opsets().values():
        for version, handlers in enumerate(domain_ops):
            if version <= opset:
                known |= set(handlers)
    return {"opset": opset, "unsupported": sorted(o for o in ops if o not in known)}


def _training_op(op: str) -> bool:
    return op.startswith(("Apply", "ResourceApply", "Save", "Restore", "Assign")) or \
        op.endswith(("Summary", "SummaryV2", "Grad")) or op in {"MergeV2Checkpoints",
                                                               "ShardedFilename", "StringJoin"}


def _inference_graph(graph_def, candidates: list[str] | None = None):
    """What the candidate outputs run at inference: the graph cut to them, flags folded,
    constant branches chosen (graphfreeze's own strip pass; variables stay variables)."""
    from graphfreeze.graph.graphdefs import extract, reachable
    from graphfreeze.graph.strip import strip_training

    candidates = candidates or names.likely_outputs(graph_def, limit=20)
    if not candidates:
        return graph_def
    sub = extract(graph_def, candidates)
    flags = names.flag_nodes(sub, reachable(sub, candidates), set())
    inputs = [n.name for n in sub.node if n.op in names.PLACEHOLDER_OPS and n.name not in flags]
    sub = type(graph_def)(node=list(sub.node), library=sub.library, versions=sub.versions)
    by_name = {n.name: n for n in sub.node}
    outs = []
    for i, name in enumerate(candidates):  # read through Identities: the outputs themselves
        out = sub.node.add(name=f"inspect/output_{i}", op="Identity", input=[name])  # may be calls
        out.attr["T"].type = _output_dtype(by_name[name])
        outs.append(out.name)
    try:
        sub, _ = strip_training(sub, outs + inputs, flags)
    except Exception:  # noqa: BLE001 -- the raw graph's ops are still a fair answer
        pass
    return sub


def _output_dtype(node) -> int:
    """DataType of a node's first output, from its attrs (1 = float32 if none says)."""
    for key in ("output_type", "out_type", "DstT", "dtype", "T"):
        if key in node.attr and node.attr[key].type:
            return node.attr[key].type
    if "Tout" in node.attr and node.attr["Tout"].list.type:
        return node.attr["Tout"].list.type[0]
    return 1


def _gaps(graph_def, candidates: list[str] | None = None) -> dict:
    try:
        graph = _inference_graph(graph_def, candidates)
    except Exception:  # noqa: BLE001 -- then judge the ops of the graph as it is
        graph = graph_def
    return target_gaps(graph, set(op_counts(graph)))


def _checkpoint(path: str, meta: str | None, step: int | None) -> dict:
    from graphfreeze.sources.checkpoint import locate, read_meta_graph

    files = locate(path, meta, step)
    meta_graph = read_meta_graph(files.meta)
    graph_def = meta_graph.graph_def
    io = _likely_io(graph_def)
    data = storage.glob(files.prefix, ".data-*") + [files.prefix + ".index", files.meta]
    return {"files": {"prefix": files.prefix, "meta": files.meta},
            "size_bytes": _size(data),
            "variables": checkpoint_variables(files.prefix),
            "signatures": [], **io, "op_counts": op_counts(graph_def),
            "targets": _gaps(graph_def)}


def _saved_model(path: str, tag: str) -> dict:
    from graphfreeze.sources.saved_model import read_saved_model_proto, signatures

    proto = read_saved_model_proto(path)
    metas = [m for m in proto.meta_graphs if tag in m.meta_info_def.tags] or list(proto.meta_graphs)
    meta = metas[0]
    sigs = signatures(meta)
    variables_prefix = storage.join(path, "variables", "variables")
    variables = checkpoint_variables(variables_prefix) \
        if storage.exists(variables_prefix + ".index") else []
    chosen = next((s for s in sigs if s.key == "serving_default"), sigs[0] if sigs else None)

    def tensors(items):
        return [{"key": k, "name": t[0], "dtype": t[1], "shape": t[2]} for k, t in items.items()]

    return {"size_bytes": _size([path]),
            "tag_sets": [sorted(m.meta_info_def.tags) for m in proto.meta_graphs],
            "variables": [v for v in variables if "/.ATTRIBUTES/" not in v["name"] or
                          v["name"].endswith("VARIABLE_VALUE")],
            "signatures": [{"key": s.key, "inputs": tensors(s.inputs),
                            "outputs": tensors(s.outputs)} for s in sigs],
            "inputs": tensors(chosen.inputs) if chosen else [],
            "outputs": tensors(chosen.outputs) if chosen else [],
            "flags": {}, "op_counts": op_counts(meta.graph_def),
            "targets": _gaps(meta.graph_def, sorted(
                {t[0].split(":")[0] for t in chosen.outputs.values()}) if chosen else None)}


def _keras(path: str) -> dict:
    from graphfreeze.sources import keras_model

    model = keras_model.load(path)
    ops = op_counts(model.graph_def)
    io = {"inputs": graph_tensors(model.graph_def, [names.TensorRef(n) for n in
                                                    model.default_inputs]),
          "outputs": graph_tensors(model.graph_def, [names.TensorRef(n) for n in
                                                     model.default_outputs])}
    weights = [{"name": w.path if hasattr(w, "path") else w.name, "shape": list(w.shape),
                "dtype": w.dtype if isinstance(w.dtype, str) else w.dtype.name,
                "bytes": int(w.numpy().nbytes)} for w in model.keras_model.weights]
    return {"size_bytes": _size([path]), "keras": model.notes, "variables": weights,
            "signatures": [], **io, "flags": {}, "op_counts": ops,
            "targets": target_gaps(model.graph_def, set(ops))}


def _frozen(path: str) -> dict:
    from graphfreeze.sources.frozen import read_graph_def

    graph_def = read_graph_def(path)
    io = _likely_io(graph_def)
    return {"size_bytes": _size([path]), "variables": [], "signatures": [], **io,
            "op_counts": op_counts(graph_def),
            "targets": _gaps(graph_def)}
