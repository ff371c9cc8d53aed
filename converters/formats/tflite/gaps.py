"""Which ops TFLite takes: parsed from a converter error, or probed by converting one node of
each op type (what `freeze inspect` reports for the tflite targets)."""

from __future__ import annotations

import re

from graphfreeze.errors import first_line
from graphfreeze.formats.tflite.convert import converter_error_ops
from graphfreeze.plugins import OpGaps


def tflite_gaps(graph_def, ops: set[str]) -> OpGaps:
    """OpGaps for the tflite targets: builtins that are missing, and which of those Flex runs."""
    result = convert_each_op(graph_def, sorted(ops))
    text = ", ".join(result["unsupported"]) or "all checked ops convert"
    if result["needs_allow_tf_ops"]:
        text += f" (with --allow-tf-ops: {', '.join(result['needs_allow_tf_ops'])})"
    if result["unchecked"]:
        text += f"; unchecked (only inside functions): {', '.join(result['unchecked'])}"
    return OpGaps("tflite", result["unsupported"], f"tflite builtins: {text}",
                  {k: v for k, v in result.items() if k != "unsupported"})


def convert_each_op(graph_def, ops: list[str]) -> dict:
    """Which of `ops` TFLite builtins cannot take: one node of each type (main graph) is copied
    into a small graph, its tensor inputs as placeholders of their inferred shapes and its small
    constant inputs kept, and the lot converted once. Ops only inside functions are "unchecked"."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import nodes_by_name
    from graphfreeze.graph.session import import_graph
    from graphfreeze.graph.skeleton import skeleton
    from graphfreeze.process.quiet import native_stderr_off

    by_name = nodes_by_name(graph_def)
    chosen = {}
    for node in graph_def.node:
        if node.op in ops and node.op not in chosen:
            chosen[node.op] = node
    graph = import_graph(skeleton(graph_def))
    probe = type(graph_def)()
    probe.versions.CopyFrom(graph_def.versions)
    inputs, outputs, checked = [], [], []
    for op, node in sorted(chosen.items()):
        pieces = _probe_inputs(graph, by_name, node, f"probe_{op}")
        if pieces is None:
            continue
        for piece, shape in pieces:
            probe.node.add().CopyFrom(piece)
            if shape is not None:
                inputs.append((piece.name, shape))
        new = probe.node.add()
        new.CopyFrom(node)
        new.name, new.device = f"probe_{op}", ""
        del new.input[:]
        new.input.extend(piece.name for piece, _ in pieces)
        outputs.append(new.name)
        checked.append(op)
    unchecked = sorted(set(ops) - set(checked))
    if not outputs:
        return _probe_result([], [], unchecked)
    conv = tf.compat.v1.lite.TFLiteConverter(probe, None, None, input_arrays_with_shape=inputs,
                                             output_arrays=outputs)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS,
                                      tf.lite.OpsSet.SELECT_TF_OPS]
    try:
        with native_stderr_off():
            data = conv.convert()
    except Exception as err:  # noqa: BLE001 -- the converter's message names the ops
        _, nowhere = converter_error_ops(str(err))
        if not nowhere:
            return {**_probe_result([], [], sorted(ops)), "error": first_line(err)}
        rest = convert_each_op(graph_def, [o for o in ops if o not in nowhere])  # the others, again
        return _probe_result(rest["needs_allow_tf_ops"], rest["no_kernel"] + nowhere, rest["unchecked"])
    flex = sorted({m.decode() for m in re.findall(rb"Flex([A-Z][A-Za-z0-9]+)", data)})
    return _probe_result(flex, [], unchecked)


def _probe_result(flex: list[str], nowhere: list[str], unchecked: list[str]) -> dict:
    return {"unsupported": sorted(set(flex) | set(nowhere)), "needs_allow_tf_ops": sorted(flex),
            "no_kernel": sorted(nowhere), "unchecked": unchecked}


def _probe_inputs(graph, by_name, node, prefix: str):
    """[(NodeDef, placeholder shape or None)] standing in for `node`'s data inputs, or None."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import is_control, split_tensor
    from graphfreeze.graph.skeleton import is_big_const
    from tensorflow.core.framework import node_def_pb2

    pieces = []
    for k, inp in enumerate(i for i in node.input if not is_control(i)):
        src, index = split_tensor(inp)
        source = by_name.get(src)
        piece = node_def_pb2.NodeDef(name=f"{prefix}/in{k}")
        if source is not None and source.op == "Const" and not is_big_const(source):
            piece.op = "Const"
            piece.attr["dtype"].CopyFrom(source.attr["dtype"])
            piece.attr["value"].CopyFrom(source.attr["value"])
            pieces.append((piece, None))
            continue
        tensor = graph.get_tensor_by_name(f"{src}:{index}")
        if tensor.shape.rank is None or tensor.dtype in (tf.resource, tf.variant):
            return None
        shape = [1 if d is None else d for d in tensor.shape.as_list()]
        piece.op = "Placeholder"
        piece.attr["dtype"].type = tensor.dtype.base_dtype.as_datatype_enum
        piece.attr["shape"].shape.CopyFrom(tf.TensorShape(shape).as_proto())
        pieces.append((piece, shape))
    return pieces
