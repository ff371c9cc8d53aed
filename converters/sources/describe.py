"""What `freeze inspect` reports, read from a model's files: sizes, checkpoint variables, likely
inputs and outputs with shapes, and the graph inference would run (what per-format op gaps are
judged on). Used by each source's `describe`."""

from __future__ import annotations

import contextlib

from graphfreeze import names
from graphfreeze.graph.graphdefs import gc_paused
from graphfreeze.graph.ops import PLACEHOLDER_OPS
from graphfreeze.io import storage


def total_size(paths: list[str]) -> int:
    import os

    from graphfreeze.io.paths import is_remote

    total = 0
    for p in paths:
        if storage.isdir(p):
            if is_remote(p):
                import tensorflow as tf

                walk = tf.io.gfile.walk(p)
            else:
                walk = os.walk(p)
            for root, _, files in walk:
                total += sum(storage.size(storage.join(root, f)) for f in files)
        elif storage.exists(p):
            total += storage.size(p)
    return total


_RECORDED: list[bool] = [False]  # graph_tensors reads the graph's records first (inspect --no-gaps)


@contextlib.contextmanager
def recorded_shapes(on: bool = True):
    """Within: graph_tensors answers from the graph's own records when every tensor has one
    (no TensorFlow import), else by shape inference as always."""
    saved, _RECORDED[0] = _RECORDED[0], on
    try:
        yield
    finally:
        _RECORDED[0] = saved


def recorded_tensors(graph_def, refs) -> list[dict] | None:
    """name, dtype, shape of tensors from the graph's records: a placeholder's `shape` and
    `dtype`, another node's `_output_shapes` and its op's output type; None if one lacks them."""
    from graphfreeze.proto import dtypes
    from graphfreeze.proto.ops import op_def

    wanted = {r.node for r in refs}
    nodes = {n.name: n for n in graph_def.node if n.name in wanted}
    rows = []
    for ref in refs:
        node = nodes.get(ref.node)
        if node is None:
            return None
        if node.op in PLACEHOLDER_OPS and ref.index == 0 and "shape" in node.attr:
            shape, dtype = node.attr["shape"].shape, node.attr["dtype"].type
        else:
            shapes = node.attr["_output_shapes"].list.shape if "_output_shapes" in node.attr else []
            args = op_def(node.op).output_arg if op_def(node.op) is not None else []
            if ref.index != 0 or not shapes or len(args) != 1 or args[0].number_attr or \
                    args[0].type_list_attr:
                return None
            shape = shapes[ref.index]
            dtype = args[0].type or node.attr[args[0].type_attr].type
        if not dtype:
            return None
        rows.append({"name": ref.name, "dtype": dtypes.name(dtype), "shape": None if
                     shape.unknown_rank else [None if d.size < 0 else d.size for d in shape.dim]})
    return rows


def graph_tensors(graph_def, refs) -> list[dict]:
    """name, dtype, shape of tensors, from shape inference on the weightless graph (or, within
    `recorded_shapes()`, from the graph's records when it has them)."""
    from graphfreeze.graph.graphdefs import extract
    from graphfreeze.tensors import tensor_infos

    recorded = recorded_tensors(graph_def, refs) if _RECORDED[0] else None
    if recorded is not None:
        return recorded

    try:
        infos = tensor_infos(extract(graph_def, [r.node for r in refs]), refs)
    except Exception:  # noqa: BLE001 -- a graph TF can't import still gets its names listed
        return [{"name": r.name, "dtype": None, "shape": None} for r in refs]
    return [{"name": i.name, "dtype": i.dtype, "shape": None if i.shape is None else list(i.shape)}
            for i in infos]


def _io_tensors(graph_def, inputs, outputs) -> tuple[list[dict], list[dict]]:
    """graph_tensors of the inputs and of the outputs, from one import of the graph when it
    imports (each part on its own when it does not, so one bad part spoils only itself)."""
    rows = graph_tensors(graph_def, [*inputs, *outputs])
    if rows and all(r["dtype"] is None for r in rows):
        return graph_tensors(graph_def, inputs), graph_tensors(graph_def, outputs)
    return rows[:len(inputs)], rows[len(inputs):]


@gc_paused()  # walks of a big graph
def likely_io(graph_def) -> dict:
    """The likeliest output, the inputs it needs, the flags folded, other candidate outputs
    (a parse op's or an iterator's features named by their keys, as a run names them)."""
    from graphfreeze.graph.inputs import features_as_nodes

    graph_def = features_as_nodes(graph_def)
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
    input_rows, output_rows = _io_tensors(graph_def, inputs, outputs)
    return {"inputs": input_rows,
            "outputs": output_rows,
            "other_outputs": likely[1:],
            "flags": {k: v for k, v in sorted(flags.items())}}



_NOT_COMPUTE = {"Placeholder", "PlaceholderWithDefault", "Const", "Identity", "NoOp",
                "VariableV2", "VarHandleOp", "ReadVariableOp", "Assign", "AssignVariableOp",
                "RestoreV2", "SaveV2", "Switch", "Merge", "If", "StatelessIf", "While",
                "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall"}



def _training_op(op: str) -> bool:
    return op.startswith(("Apply", "ResourceApply", "Save", "Restore", "Assign")) or \
        op.endswith(("Summary", "SummaryV2", "Grad")) or op in {"MergeV2Checkpoints",
                                                               "ShardedFilename", "StringJoin"}


@gc_paused()
def inference_graph(graph_def, candidates: list[str] | None = None):
    """What the candidate outputs run at inference: the graph cut to them, flags folded,
    constant branches chosen (graphfreeze's own strip pass; variables stay variables)."""
    from graphfreeze.graph.graphdefs import extract, reachable
    from graphfreeze.graph.passes.builtin import strip_training

    candidates = candidates or names.likely_outputs(graph_def, limit=20)
    if not candidates:
        return graph_def
    sub = extract(graph_def, candidates)
    flags = names.flag_nodes(sub, reachable(sub, candidates), set())
    inputs = [n.name for n in sub.node if n.op in PLACEHOLDER_OPS and n.name not in flags]
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
    """DataType of a node's first output, from its op's definition and attrs (a function
    call's: its attrs; 1 = float32 if none says)."""
    from graphfreeze.graph.features import output_types
    from graphfreeze.proto.ops import op_def

    if op_def(node.op) is not None:
        types = output_types(node)
        if types and types[0]:
            return types[0]
    for key in ("output_type", "out_type", "DstT", "dtype", "T"):
        if key in node.attr and node.attr[key].type:
            return node.attr[key].type
    if "Tout" in node.attr and node.attr["Tout"].list.type:
        return node.attr["Tout"].list.type[0]
    return 1


def compute_ops(graph_def) -> set[str]:
    """The op types of a graph (and its functions) that compute at inference: what a format
    must be able to take (not placeholders, variables, savers, control flow or training ops)."""
    from graphfreeze.graph.graphdefs import op_counts

    return {o for o in op_counts(graph_def, functions=True)
            if o not in _NOT_COMPUTE and not _training_op(o)}
