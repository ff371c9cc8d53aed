"""Fold inference batch norms and constant scale/shift into the preceding conv or matmul.

- `FusedBatchNorm*` (is_training=False, constant statistics) and the deprecated
  `BatchNormWithGlobalNormalization` (as optimize_for_inference folds it) after Conv2D, DepthwiseConv2dNative
  or MatMul (optionally through a BiasAdd) becomes new weights and one BiasAdd; elsewhere it
  becomes a Mul and an Add.
- `Mul(layer, c)` and `Add(layer, c)` by per-channel constants -- what an unfused batch norm is
  once its statistics are folded -- go into the weights and the bias the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import node_def_pb2

import numpy as np
from graphfreeze.graph.consts import HELD, const_value, is_const, make_const
from graphfreeze.graph.graphdefs import (
    consumers,
    extract,
    is_control,
    nodes_by_name,
    split_tensor,
    with_nodes,
)
from graphfreeze.graph.passes.contract import PassResult

LAYER_OPS = ("Conv2D", "DepthwiseConv2dNative", "MatMul")
BN_OPS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3",
          "BatchNormWithGlobalNormalization")


def fold_batch_norms(graph_def, keep: list[str]) -> PassResult:
    """Apply the folds until none applies (each sweep does every non-overlapping fold)."""
    changed = False
    for _ in range(len(graph_def.node) + 1):
        folded = _fold_sweep(graph_def, set(keep))
        if folded is None:
            break
        graph_def, changed = extract(folded, keep, owned=True), True
    return PassResult(graph_def, changed)


def _fold_sweep(graph_def, keep: set[str]):
    """One pass of non-overlapping folds, written straight into a new GraphDef.

    New nodes go into the output as they are made and the weights they replace are not copied;
    held apart (graph/weights.py), those are freed as each fold is made.
    """
    by_name = nodes_by_name(graph_def)
    users = consumers(graph_def)
    held = HELD.get()
    out = with_nodes(graph_def, ())
    gone: set[str] = set()
    for node in graph_def.node:
        if node.name in gone:
            continue
        replacement = _fold_node(node, by_name, users, keep, gone)
        if replacement is None:
            continue
        nodes, drop = replacement
        gone |= {node.name, *drop}
        for old in drop:  # the replaced layer's own weights, if nothing else reads them
            for inp in by_name[old].input[1:]:
                src = split_tensor(inp)[0]
                if _sole_const(by_name[src], users, keep):
                    gone.add(src)
                    if held is not None:  # freed now, not after the sweep
                        held.release(by_name[src])
        while nodes:
            out.node.add().CopyFrom(nodes.pop())
    if not gone:
        return None
    for node in graph_def.node:
        if node.name not in gone:
            out.node.add().CopyFrom(node)
    return out


def _fold_node(node, by_name, users, keep, gone: set):
    """(new nodes, names they replace besides `node`) for one fold, or None (also when it
    overlaps a fold made in this sweep, the `gone` nodes: before any weight is edited)."""
    if node.op in BN_OPS:
        scale_shift = _bn_scale_shift(node, by_name, users)
    elif node.op in ("Mul", "Add", "AddV2", "BiasAdd"):
        scale_shift = _affine_by_const(node, by_name)
    else:
        return None
    if scale_shift is None:
        return None
    x, scale, shift = scale_shift
    layer = _layer_below(by_name, users, x, keep)
    if layer is not None and node.op == "BiasAdd" and layer[1] is None:
        return None  # already the canonical layer + BiasAdd
    if layer is not None and gone & {node.name, *layer[2]}:
        return None  # next sweep
    if layer is not None:
        replacement = _fold_into_layer(node.name, by_name, layer, scale, shift,
                                       lambda src: _sole_const(src, users, keep))
        if replacement is not None:
            return replacement, layer[2]
    if node.op not in BN_OPS:
        return None
    dtype = node.attr["T"].type  # no layer to fold into: plain Mul + Add
    mul = _op("Mul", node.name + "/scale", [x, node.name + "/scale_value"], dtype)
    add = _op("AddV2", node.name, [mul.name, node.name + "/shift_value"], dtype)
    return [make_const(node.name + "/scale_value", scale.astype(_np(dtype))), mul,
            make_const(node.name + "/shift_value", shift.astype(_np(dtype))), add], []


def _bn_scale_shift(node, by_name, users):
    """(x, scale, shift) of an inference batch norm with constant statistics."""
    if node.op == "BatchNormWithGlobalNormalization":
        return _global_norm_scale_shift(node, by_name)
    if node.attr["is_training"].b:
        return None
    if any(split_tensor(i)[1] > 0 for u in users.get(node.name, ())
           for i in by_name[u].input if split_tensor(i)[0] == node.name):
        return None  # someone reads batch statistics
    data = [i for i in node.input if not is_control(i)]
    gamma, beta, mean, var = (const_value(by_name, i) for i in data[1:5])
    if any(v is None or v.size == 0 for v in (gamma, beta, mean, var)):
        return None
    fmt = node.attr["data_format"].s.decode() or "NHWC"
    if not fmt.endswith("C"):
        return None
    eps = node.attr["epsilon"].f
    scale = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    shift = beta.astype(np.float64) - mean.astype(np.float64) * scale
    return data[0], scale, shift


def _global_norm_scale_shift(node, by_name):
    """BatchNormWithGlobalNormalization(t, mean, variance, beta, gamma): gamma applies only
    with scale_after_normalization, as in optimize_for_inference."""
    data = [i for i in node.input if not is_control(i)]
    mean, var, beta, gamma = (const_value(by_name, i) for i in data[1:5])
    if any(v is None or v.size == 0 for v in (mean, var, beta, gamma)):
        return None
    scale = 1.0 / np.sqrt(var.astype(np.float64) + node.attr["variance_epsilon"].f)
    if node.attr["scale_after_normalization"].b:
        scale = scale * gamma.astype(np.float64)
    shift = beta.astype(np.float64) - mean.astype(np.float64) * scale
    return data[0], scale, shift


def _affine_by_const(node, by_name):
    """(x, scale, shift) for x * c or x + c with c a per-channel constant."""
    data = [i for i in node.input if not is_control(i)]
    if len(data) != 2:
        return None
    value = const_value(by_name, data[1])
    x = data[0]
    if value is None and node.op != "BiasAdd":
        value, x = const_value(by_name, data[0]), data[1]
    if value is None or value.dtype.kind != "f":
        return None
    if value.ndim > 1 and any(d != 1 for d in value.shape[:-1]):
        return None
    vec = value.reshape(-1).astype(np.float64)
    if node.op == "Mul":
        return x, vec, np.zeros_like(vec)
    return x, np.ones_like(vec), vec


def _layer_below(by_name, users, tensor, keep):
    """(layer node, bias node or None, nodes to drop) when `tensor` is a single-use layer output."""
    name, index = split_tensor(tensor)
    node = by_name.get(name)
    if node is None or index != 0 or len(users.get(name, ())) != 1 or name in keep:
        return None
    bias = None
    if node.op == "BiasAdd":
        bias = node
        name, index = split_tensor(node.input[0])
        node = by_name.get(name)
        if node is None or index != 0 or len(users.get(name, ())) != 1 or name in keep:
            return None
        if not is_const(by_name, bias.input[1]):
            return None
    if node.op not in LAYER_OPS or not is_const(by_name, node.input[1]):
        return None
    if node.op == "MatMul" and node.attr["transpose_a"].b:
        return None
    if node.op != "MatMul" and (node.attr["data_format"].s.decode() or "NHWC") != "NHWC":
        return None
    drop = [node.name] + ([bias.name] if bias is not None else [])
    return node, bias, drop


def _sole_const(node, users, keep) -> bool:
    """A Const the fold's layer alone reads: the sweep drops it (and may edit it in place)."""
    return node.op == "Const" and len(users.get(node.name, ())) == 1 and node.name not in keep


def _fold_into_layer(out_name, by_name, layer, scale, shift, sole):
    node, bias, _ = layer
    weights = const_value(by_name, node.input[1])
    channels = _out_channels(node, weights)
    if scale.size not in (1, channels) or shift.size not in (1, channels):
        return None
    scale = np.broadcast_to(scale, (channels,))
    shift = np.broadcast_to(shift, (channels,))
    dtype = weights.dtype
    scale_w = scale.astype(dtype)  # multiply in the weights' own precision, as TF does
    if node.op == "Conv2D":
        scale_w = scale_w.reshape(1, 1, 1, -1)
    elif node.op == "DepthwiseConv2dNative":
        scale_w = scale_w.reshape(1, 1, weights.shape[2], weights.shape[3])
    else:
        scale_w = scale_w.reshape(-1, 1) if node.attr["transpose_b"].b else scale_w.reshape(1, -1)
    src = by_name[split_tensor(node.input[1])[0]]  # (the sweep frees it if this layer is all)
    mine = HELD.get().editable(src) if HELD.get() is not None and sole(src) else None
    new_w = np.multiply(weights, scale_w, out=mine)  # in place: no second copy of the layer
    old_b = const_value(by_name, bias.input[1]).astype(np.float64) if bias is not None else 0.0
    new_b = old_b * scale + shift
    layer = type(node)()
    layer.CopyFrom(node)
    layer.name = out_name + "/folded"
    layer.input[1] = out_name + "/folded_weights"
    biasadd = _op("BiasAdd", out_name, [layer.name, out_name + "/folded_bias"], node.attr["T"].type)
    return [make_const(out_name + "/folded_weights", new_w), layer,
            make_const(out_name + "/folded_bias", new_b.astype(dtype)), biasadd]


def _out_channels(node, weights) -> int:
    if node.op == "Conv2D":
        return weights.shape[3]
    if node.op == "DepthwiseConv2dNative":
        return weights.shape[2] * weights.shape[3]
    return weights.shape[0] if node.attr["transpose_b"].b else weights.shape[1]


def _op(op: str, name: str, inputs: list[str], dtype: int) -> node_def_pb2.NodeDef:
    from graphfreeze.proto.tf import node_def_pb2

    node = node_def_pb2.NodeDef(name=name, op=op, input=inputs)
    node.attr["T"].type = dtype
    return node


def _np(dtype_enum: int):
    from graphfreeze.proto.dtypes import numpy_dtype

    return numpy_dtype(dtype_enum)
