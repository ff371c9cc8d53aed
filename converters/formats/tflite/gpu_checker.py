"""LiteRT's GPU delegate compatibility rules, the rest of them (see `gpu_rules`), and `check`:
gpu_compatibility.cc's `CheckGpuDelegateCompatibility` switch, op by op."""

from __future__ import annotations

from graphfreeze.formats.tflite.gpu_rules import (
    CUSTOM_OK,
    FLOATS,
    Sig,
    Unsupported,
    _activation,
    _axes_int32_const,
    _block,
    _broadcastable,
    _cast,
    _conv_io,
    _depthwise,
    _elements,
    _fully_connected,
    _gather,
    _io,
    _io_consts,
    _lstm,
    _mul,
    _one_or_two,
    _opt,
    _pad,
    _pool,
    _positive,
    _select,
    _slice,
)


def _add(sig: Sig) -> None:
    if len(sig.inputs) != 2:
        raise Unsupported("ADD requires two input tensors.")
    _broadcastable(*sig.inputs)


def _only(count: int, message: str):
    def check(sig: Sig) -> None:
        if len(sig.inputs) != count:
            raise Unsupported(message)
    return check


def _batch_matmul(sig: Sig) -> None:
    if len(sig.inputs) != 2 or len(sig.outputs) != 1:
        raise Unsupported(f"Expected 2 inputs and 1 output, got: {len(sig.inputs)} inputs and "
                          f"{len(sig.outputs)} outputs")


def _conv(sig: Sig) -> None:
    _conv_io(sig)
    _positive("stride", _opt(sig, "strideH"), _opt(sig, "strideW"))
    if sig.op == "CONV_2D":
        _positive("dilation", _opt(sig, "dilationHFactor", 1), _opt(sig, "dilationWFactor", 1))
        _activation(_opt(sig, "fusedActivationFunction"))


def _cumsum(sig: Sig) -> None:
    if len(sig.inputs) != 2:
        raise Unsupported("Expects 2 inputs and 1 output")
    x, axis = sig.inputs
    if x.type not in FLOATS or sig.outputs[0].type != x.type or axis.type != "INT32" or \
            not axis.is_const:
        raise Unsupported("Input/output must be float type and indices must be constant int32 "
                          "type")


def _dequantize(sig: Sig) -> None:
    if len(sig.inputs) != 1 or len(sig.outputs) != 1:
        raise Unsupported("Expected 1 input & output each from Dequantize")
    if sig.inputs[0].type == "INT16":
        raise Unsupported("Unsupported dequantization type.")


def _mean(sig: Sig) -> None:
    _io_consts(sig, 1, 1, 1)
    _axes_int32_const(sig, 1)


def _reduce(sig: Sig) -> None:
    _io(sig, 1, 1)
    _axes_int32_const(sig, 1)


def _softmax(sig: Sig) -> None:
    if _opt(sig, "beta", 1.0) != 1:
        raise Unsupported("Softmax.beta != 1 is not supported.")


def _resize_bilinear(sig: Sig) -> None:
    _io(sig, 1, 1)
    if _opt(sig, "alignCorners", False) and _opt(sig, "halfPixelCenters", False):
        raise Unsupported("If half_pixel_centers is True, align_corners must be False.")


def _unary(sig: Sig) -> None:
    _io_consts(sig, 1, 0, 1)


def _binary(sig: Sig) -> None:
    _one_or_two(sig)
    _activation(_opt(sig, "fusedActivationFunction"))


def _embedding_lookup(sig: Sig) -> None:
    if len(sig.inputs) != 2:
        raise Unsupported(f"Expected 2, but got {len(sig.inputs)} inputs.")
    ids, values, out = sig.inputs[0], sig.inputs[1], sig.outputs[0]
    if len(ids.dims) != 1:
        raise Unsupported(f"Expected 1D, but got {len(ids.dims)}D input #0.")
    if len(values.dims) < 2:
        raise Unsupported(f"Expected > 1D, but got {len(values.dims)}D input #1.")
    if len(values.dims) != len(out.dims) or values.dims[1:] != out.dims[1:]:
        raise Unsupported("Expected the output's dims to follow input #1's.")
    if values.type not in ("INT8", "INT4", "FLOAT32"):
        raise Unsupported(f"Expected int8, int4, or float32, but got {values.type} for input #1.")


def _dynamic_update_slice(sig: Sig) -> None:
    if len(sig.inputs) != 3:
        raise Unsupported("DynamicUpdateSlice requires 3 inputs.")
    operand, update, start = sig.inputs
    if len(operand.dims) == 4 and operand.dims[0] != 1:
        raise Unsupported("DynamicUpdateSlice only support 4D operand with batch size 1.")
    if len(start.dims) != 1:
        raise Unsupported("DynamicUpdateSlice only support 1D start_indices.")
    if operand.type != update.type:
        raise Unsupported("Array to update and updated slice must have the same data type.")
    if start.type != "INT32":
        raise Unsupported("start_indices must be of type int32.")
    if len(update.dims) != len(operand.dims):
        raise Unsupported("Operand and update must have the same number of dimensions.")


def _one_hot(sig: Sig) -> None:
    error = Unsupported("Indices must be int32 type, on/off tensors must be constant, scalar, "
                        "float type, axis must be -1 or last dim")
    if len(sig.inputs) != 4:
        raise Unsupported("Expects 4 inputs and 1 output")
    indices, _, on, off = sig.inputs
    if indices.type != "INT32":
        raise error
    axis = _opt(sig, "axis", -1)
    if axis != -1 and axis != (indices.dims[-1] if indices.dims else None):
        raise error
    for i, d in enumerate(indices.dims[:-1]):
        if not (len(indices.dims) > 3 and i == 0) and d != 1:
            raise Unsupported(f"Unspported non-singleton dim at {i}")
    for spec in (on, off):
        if spec.type != "FLOAT32" or not spec.is_const or len(spec.dims) > 1 or \
                (spec.dims and spec.dims[0] > 1):
            raise error


def _clamp(sig: Sig) -> None:
    a, b, c = sig.inputs[:3]
    if not a.type == b.type == c.type:
        raise Unsupported("Clamp tensors must all be the same type")
    if a.dims != b.dims and _elements(a.dims) != 1:
        raise Unsupported("Min tensor must be the same shape as the input, or a scalar")
    if c.dims != b.dims and _elements(a.dims) != 1:
        raise Unsupported("Max tensor must be the same shape as the input, or a scalar")
    _io_consts(sig, 3, 0, 1)


def _custom(sig: Sig) -> None:
    if sig.op not in CUSTOM_OK:
        raise Unsupported(f"Not supported custom op {sig.op}")
    if sig.op == "MaxPoolingWithArgmax2D":
        _pool(sig)
    elif sig.op in ("MaxUnpooling2D", "Resampler"):
        _io(sig, 2, 1)
    elif len(sig.inputs) < 2:
        raise Unsupported(f"Requested index goes beyond array size: 1 vs {len(sig.inputs)}")


def _ok(sig: Sig) -> None:
    return None


UNARY = ("ABS", "CEIL", "COS", "ELU", "EXP", "FLOOR", "GELU", "LOG", "LOGISTIC", "NEG", "RSQRT",
         "SIGN", "SIN", "SQRT", "SQUARE", "TANH")
BINARY = ("ATAN2", "DIV", "EQUAL", "FLOOR_DIV", "FLOOR_MOD", "GREATER", "GREATER_EQUAL",
          "LOGICAL_AND", "LESS", "LESS_EQUAL", "MAXIMUM", "MINIMUM", "NOT_EQUAL", "POW",
          "SQUARED_DIFFERENCE", "SUB")
RULES = {
    "ADD": _add, "ADD_N": _only(2, "ADD_N only supports 2 inputs."),
    "AVERAGE_POOL_2D": _pool, "MAX_POOL_2D": _pool, "BATCH_MATMUL": _batch_matmul,
    "CAST": _cast, "CONCATENATION": _ok, "CONV_2D": _conv, "TRANSPOSE_CONV": _conv,
    "CUMSUM": _cumsum, "DENSIFY": lambda s: _io(s, 0, 1), "DEPTHWISE_CONV_2D": _depthwise,
    "DEPTH_TO_SPACE": _block, "SPACE_TO_DEPTH": _block, "DEQUANTIZE": _dequantize,
    "EMBEDDING_LOOKUP": _embedding_lookup, "DYNAMIC_UPDATE_SLICE": _dynamic_update_slice,
    "FULLY_CONNECTED": _fully_connected, "GATHER": _gather, "HARD_SWISH": lambda s: _io(s, 1, 1),
    "LSTM": _lstm, "MEAN": _mean, "MUL": _mul, "PACK": _ok, "ONE_HOT": _one_hot,
    "QUANTIZE": lambda s: _io(s, 1, 1), "RELU_N1_TO_1": _ok, "PRELU": _ok,
    "RESHAPE": lambda s: _io(s, 1, 1), "SELECT": _select, "SELECT_V2": _select,
    "SLICE": _slice, "STRIDED_SLICE": _slice, "SOFTMAX": _softmax, "SPLIT": _ok, "SPLIT_V": _ok,
    "TILE": lambda s: _io(s, 1, 1), "TRANSPOSE": lambda s: _io(s, 1, 1),
    "RESIZE_BILINEAR": _resize_bilinear, "RESIZE_NEAREST_NEIGHBOR": lambda s: _io(s, 1, 1),
    "RELU": _ok, "RELU6": _ok, "LEAKY_RELU": _ok, "REDUCE_MAX": _reduce, "REDUCE_MIN": _reduce,
    "REDUCE_PROD": _reduce, "SUM": _reduce, "PAD": _pad, "PADV2": _pad, "MIRROR_PAD": _pad,
    "STABLEHLO_CLAMP": _clamp, **dict.fromkeys(UNARY, _unary), **dict.fromkeys(BINARY, _binary),
}


def check(sig: Sig) -> str | None:
    """None when the GPU delegate takes the op, else the checker's reason."""
    rule = _custom if sig.custom else RULES.get(sig.op)
    if rule is None:
        return f"Not supported op {sig.op}"
    try:
        rule(sig)
    except Unsupported as err:
        return str(err)
    except IndexError:  # fewer tensors than the rule reads: the checker's vector.at() throws
        return f"{sig.op}: unexpected number of tensors"
    return None
