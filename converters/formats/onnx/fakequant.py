"""TensorFlow's fake quantization as ONNX QuantizeLinear/DequantizeLinear, exactly.

tf2onnx's own handler ignores TensorFlow's nudging of min/max (so zero is a grid point), refuses
narrow_range and takes no per-channel op: a QAT model's ONNX differs from the model by whole
quantization steps. Here each FakeQuantWithMinMaxArgs/Vars/VarsPerChannel becomes what the
kernel computes (tensorflow/core/kernels/fake_quant_ops_functor.h): scale and zero point from
`Nudge`, a clamp to the nudged range when the integer type's own range is wider (narrow_range,
num_bits < 8), per-channel along the last axis, and zeros where min == max == 0. A node that
cannot be exact (ranges computed at run time, min > max, more bits than the opset's types) is
refused with its name.
"""

from __future__ import annotations

import contextlib
import logging
import re

import numpy as np
from graphfreeze.graph.fake_quant import FAKE_QUANT_OPS


class NodeRefused(Exception):
    """A node the ONNX export cannot convert faithfully: `node`, `op` and the reason."""

    def __init__(self, node: str, op: str, reason: str):
        super().__init__(f"node '{node}' ({op}): {reason}")
        self.node, self.op, self.reason = node, op, reason


def nudge(lo, hi, num_bits: int, narrow_range: bool):
    """TensorFlow's Nudge in float32: (scale, zero point, nudged min, nudged max, qmin, qmax)."""
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    qmin, qmax = (1 if narrow_range else 0), (1 << num_bits) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = (hi - lo) / np.float32(qmax - qmin)
        from_min = np.float32(qmin) - lo / scale
    rounded = np.floor(from_min.astype(np.float64) + 0.5)  # std::round; from_min > 0 here
    zero_point = np.where(from_min < qmin, qmin, np.where(from_min > qmax, qmax, rounded))
    zero_point = np.nan_to_num(zero_point).astype(np.int64)
    nudged_min = (np.float32(qmin) - zero_point.astype(np.float32)) * scale
    nudged_max = (np.float32(qmax) - zero_point.astype(np.float32)) * scale
    return scale, zero_point, nudged_min, nudged_max, qmin, qmax


def _ranges(node):
    if node.type == "FakeQuantWithMinMaxArgs":
        return np.float32(node.get_attr_value("min")), np.float32(node.get_attr_value("max"))
    for i, what in ((1, "min"), (2, "max")):
        if not node.inputs[i].is_const():
            raise NodeRefused(node.name, node.type, f"its {what} is computed at run time; ONNX "
                              "needs constant quantization ranges (freeze the ranges, or use "
                              "another target)")
    return tuple(node.inputs[i].get_tensor_value(as_list=False).astype(np.float32)
                 for i in (1, 2))


def convert(ctx, node, **kwargs):
    """The tf2onnx handler: `node` becomes [Max, Min,] QuantizeLinear, DequantizeLinear[, Where]
    under its own name, so its consumers and graph outputs keep their input."""
    from onnx import TensorProto
    from tf2onnx import utils

    del kwargs
    name, op = node.name, node.type
    lo, hi = _ranges(node)
    num_bits = int(node.get_attr_value("num_bits", 8))
    narrow = bool(node.get_attr_value("narrow_range", 0))
    per_channel = op == "FakeQuantWithMinMaxVarsPerChannel"
    zero = (lo == 0) & (hi == 0)  # TensorFlow outputs zeros there
    bad = ~zero & ~(np.isfinite(lo) & np.isfinite(hi) & (lo < hi))
    if bad.any():
        raise NodeRefused(name, op, f"quantization range [{np.min(lo)}, {np.max(hi)}] is not a "
                          "finite range with min < max; retrain or fix the model's ranges")
    if per_channel and ctx.opset < 13:
        raise NodeRefused(name, op, "per-channel quantization needs --opset 13 or newer")
    if num_bits > 8 and ctx.opset < 21:
        raise NodeRefused(name, op, f"num_bits={num_bits} needs 16-bit QuantizeLinear "
                          "(--opset 21 or newer)")
    lo, hi = np.where(zero, -1, lo).astype(np.float32), np.where(zero, 1, hi).astype(np.float32)
    scale, zero_point, nudged_min, nudged_max, qmin, qmax = nudge(lo, hi, num_bits, narrow)
    int_type, int_max = (np.uint8, 255) if num_bits <= 8 else (np.uint16, 65535)
    axis = {"axis": -1} if per_channel else {}

    def const(suffix, value):
        return ctx.make_const(utils.make_name(f"{name}_{suffix}"), np.asarray(value)).output[0]

    x = node.input[0]
    shape, dtype = ctx.get_shape(x), ctx.get_dtype(x)
    if qmin > 0 or qmax < int_max:  # the integer type would saturate outside TF's clamp
        x = ctx.make_node("Max", [x, const("nudged_min", nudged_min)], op_name_scope=name,
                          shapes=[shape], dtypes=[dtype]).output[0]
        x = ctx.make_node("Min", [x, const("nudged_max", nudged_max)], op_name_scope=name,
                          shapes=[shape], dtypes=[dtype]).output[0]
    scale_name, zp_name = const("scale", scale), const("zero_point", zero_point.astype(int_type))
    q = ctx.make_node("QuantizeLinear", [x, scale_name, zp_name], attr=axis, op_name_scope=name,
                      shapes=[shape], dtypes=[TensorProto.UINT8 if int_type is np.uint8
                                              else TensorProto.UINT16]).output[0]
    for key in list(node.attr):
        del node.attr[key]
    if zero.any():
        dq = ctx.make_node("DequantizeLinear", [q, scale_name, zp_name], attr=axis,
                           op_name_scope=name, shapes=[shape], dtypes=[dtype]).output[0]
        node.type = "Where"
        ctx.replace_inputs(node, [const("kept", ~zero), dq, const("zeros", np.float32(0))])
    else:
        node.type = "DequantizeLinear"
        ctx.replace_inputs(node, [q, scale_name, zp_name])
        for key, value in axis.items():
            node.set_attr(key, value)


def _wrapped(func, op: str):
    def run(ctx, node, **kwargs):
        name = node.name
        try:
            return func(ctx, node, **kwargs)
        except NodeRefused:
            raise
        except Exception as err:  # noqa: BLE001 -- tf2onnx's handlers raise anything
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise NodeRefused(name, op, f"tf2onnx cannot convert it at opset {ctx.opset} "
                              f"({reason}); try another --opset, or another target") from err

    return run


@contextlib.contextmanager
def quiet_tf2onnx():
    """tf2onnx's own logging off: its tracebacks, per-node lines, and "missing output shape"
    (shapes the export fills in after, `shapes.fill_io_shapes`)."""
    log = logging.getLogger("tf2onnx")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


@contextlib.contextmanager
def exact_handlers():
    """While converting: fake-quant ops use `convert`, every handler's failure names its node
    (NodeRefused), and tf2onnx's own logging (tracebacks, per-node lines) stays quiet."""
    import tf2onnx.tfonnx  # noqa: F401 -- importing it registers every op handler
    from tf2onnx import constants, handler

    onnx_opsets = handler.tf_op.get_opsets()[constants.ONNX_DOMAIN]
    saved = [(version, op, table.get(op)) for version, table in enumerate(onnx_opsets)
             for op in FAKE_QUANT_OPS if op in table]
    for version, op, _ in saved:
        del onnx_opsets[version][op]
    onnx_opsets[10].update({op: (convert, {}) for op in FAKE_QUANT_OPS})
    original = handler.tf_op.create_mapping

    def create_mapping(max_onnx_opset_version, extra_opsets):
        mapping = original(max_onnx_opset_version, extra_opsets)
        for op, (func, kwargs) in list(mapping.items()):
            mapping[op] = (_wrapped(func, op), kwargs)
        return mapping

    handler.tf_op.create_mapping = staticmethod(create_mapping)
    try:
        with quiet_tf2onnx():
            yield
    finally:
        handler.tf_op.create_mapping = staticmethod(original)
        for op in FAKE_QUANT_OPS:
            del onnx_opsets[10][op]
        for version, op, entry in saved:
            onnx_opsets[version][op] = entry


def quantize_folded_weights(model, ranges: dict[str, dict]) -> list[str]:
    """Each initializer that is a folded fake-quant node's result (named after it) becomes its
    integers plus a DequantizeLinear giving back the same floats bit for bit; one whose values do
    not come back exactly stays float. Returns the nodes rewritten."""
    from onnx import helper, numpy_helper

    graph, done = model.graph, []
    for index, tensor in enumerate(list(graph.initializer)):
        node = re.sub(r"(:\d+|__\d+)$", "", tensor.name)  # tf2onnx's suffixes
        spec = ranges.get(node)
        weights = numpy_helper.to_array(tensor) if spec else None
        if weights is None or weights.dtype != np.float32 or spec["num_bits"] > 8:
            continue
        found = _integers(weights, spec)
        if found is None:
            continue
        q, scale, zero_point, axis = found
        name, base = tensor.name, node
        graph.initializer[index].CopyFrom(numpy_helper.from_array(q, f"{base}/quantized"))
        graph.initializer.extend([numpy_helper.from_array(scale, f"{base}/scale"),
                                  numpy_helper.from_array(zero_point, f"{base}/zero_point")])
        graph.node.insert(0, helper.make_node(
            "DequantizeLinear", [f"{base}/quantized", f"{base}/scale", f"{base}/zero_point"],
            [name], name=f"{base}/dequantize", **({} if axis is None else {"axis": axis})))
        done.append(base)
    return done


def _integers(weights, spec):
    """(int8 values, scale, zero point, axis or None) that DequantizeLinear maps to `weights`
    exactly, or None. The channel axis is found by size (tf2onnx may have transposed it)."""
    lo, hi = np.asarray(spec["min"], np.float32), np.asarray(spec["max"], np.float32)
    zero = (lo == 0) & (hi == 0)
    if (~zero & ~(np.isfinite(lo) & np.isfinite(hi) & (lo < hi))).any():
        return None
    lo, hi = np.where(zero, -1, lo).astype(np.float32), np.where(zero, 1, hi).astype(np.float32)
    scale, zero_point, *_ = nudge(lo, hi, spec["num_bits"], spec["narrow_range"])
    scale = np.where(zero, np.float32(1), scale).astype(np.float32)
    zero_point = np.where(zero, 128, zero_point) - 128  # uint8 grid as int8: q - zp unchanged
    axes = [None] if not spec["per_channel"] else [
        a for a in range(weights.ndim) if weights.shape[a] == scale.size]
    for axis in axes:
        shape = [1] * weights.ndim
        if axis is not None:
            shape[axis] = scale.size
        s, z = scale.reshape(shape), zero_point.reshape(shape)
        q = np.rint(weights / s) + z
        if not ((q >= -128) & (q <= 127)).all():
            continue
        q = q.astype(np.int8)
        if np.array_equal((q.astype(np.float32) - z.astype(np.float32)) * s, weights):
            return q, scale, zero_point.astype(np.int8), axis
    return None
