"""LiteRT's GPU delegate compatibility rules, ported from its checker.

LiteRT's model analyzer (`ai_edge_litert._pywrap_analyzer_wrapper`, and TensorFlow 2.21's
`tf.lite.experimental.Analyzer`, the same code) no longer calls the checker: its
`model_analyzer.cc` keeps the "GPU COMPATIBILITY WARNING" branch, but nothing fills the list of
incompatible nodes, so every model "looks compatible". The rules themselves are
`CheckGpuDelegateCompatibility` in tensorflow/lite/tools/versioning/gpu_compatibility.cc (offline
mode: enhanced broadcast). This is that function, case by case, on the op signature
`GetOpSignature` builds (types, dims, constness of each tensor; the op's options), with its
messages. This module: the op signature and the rules of the ops with the most conditions;
`gpu_checker`: the others, and `check(sig)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FLOATS = ("FLOAT32", "FLOAT16")
OK_ACTIVATIONS = (0, 1, 2, 3, 4)  # NONE, RELU, RELU_N1_TO_1, RELU6, TANH; 5 = SIGN_BIT
CUSTOM_OK = ("Convolution2DTransposeBias", "MaxPoolingWithArgmax2D", "MaxUnpooling2D",
             "Resampler")


@dataclass(frozen=True)
class Spec:
    """One tensor of an op signature."""

    type: str  # TFLite tensor type name: FLOAT32, INT64, ...
    dims: tuple[int, ...]
    is_const: bool = False


@dataclass(frozen=True)
class Sig:
    """An op signature: the op's name (a builtin's, or a custom op's code), its tensors and its
    options object (schema_py_generated's `...OptionsT`, or None)."""

    op: str
    inputs: tuple[Spec, ...]
    outputs: tuple[Spec, ...]
    options: object = None
    custom: bool = False
    custom_options: bytes = field(default=b"", repr=False)


class Unsupported(Exception):
    """The checker's refusal; its message is the reason."""


def _opt(sig: Sig, name: str, default=0):
    return getattr(sig.options, name, default) if sig.options is not None else default


def _runtime(sig: Sig) -> int:
    return sum(1 for t in sig.inputs if not t.is_const and t.type != "NOTYPE")


def _io(sig: Sig, runtime: int, outputs: int) -> None:
    have = _runtime(sig)
    if have != runtime:
        raise Unsupported(f"Expected {runtime} runtime input tensor(s), but node has {have} "
                          "runtime input(s).")
    if len(sig.outputs) != outputs:
        raise Unsupported(f"Expected {outputs} output tensor(s), but node has "
                          f"{len(sig.outputs)} output(s).")


def _io_consts(sig: Sig, runtime: int, consts: int, outputs: int) -> None:
    have = sum(1 for t in sig.inputs if t.is_const)
    if have != consts:
        raise Unsupported(f"Expected {consts} const input tensor(s), but node has {have} const "
                          "input(s).")
    _io(sig, runtime, outputs)


def _one_or_two(sig: Sig) -> None:
    for runtime, consts in ((2, 0), (1, 1)):
        try:
            return _io_consts(sig, runtime, consts, 1)
        except Unsupported:
            pass
    raise Unsupported("Op can only handle 1 or 2 operand(s).")


def _activation(value: int) -> None:
    if value not in OK_ACTIVATIONS:
        raise Unsupported("TfLiteFusedActivation.kTfLiteActSignBit")


def _positive(what: str, h: int, w: int) -> None:
    if h <= 0 or w <= 0:
        raise Unsupported(f"Incorrect {what} values: {what}_height = {h}, {what}_width = {w}")


def _conv_io(sig: Sig) -> None:
    runtime = _runtime(sig)
    if runtime > 2:
        raise Unsupported(f"Expected 1 or 2 input tensor(s), but node has {runtime} runtime "
                          "inputs.")
    if len(sig.outputs) != 1:
        raise Unsupported(f"Expected 1 output tensor(s), but node has {len(sig.outputs)} "
                          "runtime outputs.")
    if runtime == 1 and len(sig.inputs) < 2:
        raise Unsupported(f"Requested index goes beyond array size: 1 vs {len(sig.inputs)}")


def _axes_int32_const(sig: Sig, idx: int) -> None:
    axes = sig.inputs[idx]
    if not axes.is_const:
        raise Unsupported(f"{sig.op} is only supported with constant axes.")
    if axes.type != "INT32":
        raise Unsupported(f"{sig.op} supports int32 tensor for axes. But node has {axes.type}")


def _pool(sig: Sig) -> None:
    _io(sig, 1, 2 if sig.custom else 1)
    if not sig.custom:
        _positive("kernel", _opt(sig, "filterHeight"), _opt(sig, "filterWidth"))
        _positive("stride", _opt(sig, "strideH"), _opt(sig, "strideW"))
        _activation(_opt(sig, "fusedActivationFunction"))


def _depthwise(sig: Sig) -> None:
    _conv_io(sig)
    _positive("stride", _opt(sig, "strideH"), _opt(sig, "strideW"))
    _positive("dilation", _opt(sig, "dilationHFactor", 1), _opt(sig, "dilationWFactor", 1))
    _activation(_opt(sig, "fusedActivationFunction"))
    x, w, out = sig.inputs[0], sig.inputs[1], sig.outputs[0]
    bias = sig.inputs[2] if len(sig.inputs) > 2 else None
    for name, spec in (("input", x), ("filter", w), ("output", out)):
        if len(spec.dims) != 4:
            raise Unsupported(f"{name}.dims.size != 4")
    multiplier = _opt(sig, "depthMultiplier", 1)
    if x.dims[0] != out.dims[0]:
        raise Unsupported("input.b != output.b")
    if w.dims[3] != out.dims[3]:
        raise Unsupported("filter.i != output.c")
    if out.dims[3] != x.dims[3] * multiplier:
        raise Unsupported("output.c != input.c * depth_multiplier")
    if bias is not None and bias.type != "NOTYPE" and _elements(bias.dims) != out.dims[3]:
        raise Unsupported("bias.size != output.c")
    if multiplier != 1 and x.dims[3] != 1:
        raise Unsupported("depth_multiplier != 1 && input.c != 1")


def _elements(dims) -> int:
    count = 1
    for d in dims:
        count *= d
    return count


def _broadcastable(a: Spec, b: Spec) -> None:
    if len(a.dims) > 1 and len(b.dims) > 1 and len(a.dims) != len(b.dims):
        longer, shorter = (a.dims, b.dims) if len(a.dims) >= len(b.dims) else (b.dims, a.dims)
        padded = (1,) * (len(longer) - len(shorter)) + tuple(shorter)
        if any(x != y and x != 1 and y != 1 for x, y in zip(longer, padded, strict=True)):
            raise Unsupported(f"Doesn't support broadcasting - input0: "
                              f"[{','.join(map(str, a.dims))}], input1: "
                              f"[{','.join(map(str, b.dims))}]")


def _mul(sig: Sig) -> None:
    if len(sig.inputs) != 2:
        raise Unsupported("MUL requires two input tensors.")
    a, b = sig.inputs
    if len(a.dims) == len(b.dims):
        pairs = list(zip(a.dims, b.dims, strict=True))
        if any(x < y for x, y in pairs) and any(y < x for x, y in pairs):
            raise Unsupported("MUL requires one tensor that not less than second in all "
                              "dimensions.")
    else:
        _broadcastable(a, b)
    _activation(_opt(sig, "fusedActivationFunction"))


def _cast(sig: Sig) -> None:
    _io(sig, 1, 1)
    src, dst = sig.inputs[0].type, sig.outputs[0].type
    if (src == "BOOL" and dst in FLOATS) or (src in FLOATS and dst == "BOOL") or \
            (src in ("FLOAT32", "INT32") and dst in ("FLOAT32", "INT32")):
        return
    raise Unsupported(f"Not supported Cast case. Input type: {src} and output type: {dst}")


def _select(sig: Sig) -> None:
    if len(sig.inputs) != 3 or len(sig.outputs) != 1:
        raise Unsupported("Expected 3 inputs and 1 output")
    cond, then, other = sig.inputs
    error = Unsupported(f"cond {cond.type}, if {then.type}, else {other.type}: Cond must be "
                        "float or bool type, if, else tensors must be float and either be same "
                        "the shape as output or constant, scalar.")
    if cond.type not in ("BOOL", *FLOATS) or then.type not in FLOATS or \
            other.type not in FLOATS:
        raise error
    for name, spec in (("if", then), ("else", other)):
        if spec.dims and spec.dims != sig.outputs[0].dims and \
                (len(spec.dims) > 1 or spec.dims[0] > 1):
            raise error
        if spec.is_const and len(spec.dims) == 2:
            raise Unsupported(f"2-D {name} tensor only supported if constant.")


def _fully_connected(sig: Sig) -> None:
    if _opt(sig, "weightsFormat") != 0:
        raise Unsupported(f"Unsupported FullyConnected weights format: "
                          f"{_opt(sig, 'weightsFormat')}")
    if _runtime(sig) > 2:
        raise Unsupported("FullyConnected doesn't support more than 2 runtime inputs.")
    if sig.inputs[0].is_const:
        raise Unsupported("FullyConnected doesn't support constant input.")
    if _opt(sig, "keepNumDims", False) and len(sig.inputs[0].dims) != len(sig.outputs[0].dims):
        raise Unsupported("Input and output dimensions different and FullyConnected doesn't "
                          "support keep_num_dims.")


def _gather(sig: Sig) -> None:
    _one_or_two(sig)
    if sig.inputs[0].type == "INT32":
        raise Unsupported("Does not accept INT32 input.")
    if len(sig.inputs[1].dims) != 1:
        raise Unsupported("Only support 1D indices")
    if sig.inputs[1].type != "INT32":
        raise Unsupported("Only accept INT32 indices")


def _pad(sig: Sig) -> None:
    if sig.op == "MIRROR_PAD" and _opt(sig, "mode") != 0:
        raise Unsupported("Only Reflective padding is supported for Mirror Pad operation. But "
                          f"node has {_opt(sig, 'mode')}")
    _io(sig, 1, 1)
    pads = sig.inputs[1].dims
    if len(pads) != 2:
        raise Unsupported(f"Invalid paddings tensor dimension: expected 2 dim, got {len(pads)} "
                          "dim")
    if pads[0] not in (3, 4) or pads[1] != 2:
        raise Unsupported(f"Invalid paddings tensor shape: expected 4x2 or 3x2, got "
                          f"{pads[0]}x{pads[1]}")


def _slice(sig: Sig) -> None:
    if sig.op == "STRIDED_SLICE":
        for mask, what in (("ellipsisMask", "ellipsis_mask"), ("newAxisMask", "new_axis_mask"),
                           ("shrinkAxisMask", "shrink_axis_mask parameter")):
            if _opt(sig, mask):
                raise Unsupported(f"Slice does not support {what}.")
    need = 4 if sig.op == "STRIDED_SLICE" else 3
    if len(sig.inputs) < need:
        raise Unsupported(f"{sig.op} requires {need} inputs.")
    if len(sig.inputs[0].dims) not in (3, 4):
        raise Unsupported(f"{sig.op} supports for 3 or 4 dimensional tensors only, but node "
                          f"has {len(sig.inputs[0].dims)} dimensional tensors.")


def _block(sig: Sig) -> None:
    _io(sig, 1, 1)
    size = _opt(sig, "blockSize")
    if size == 1:
        raise Unsupported(f"{sig.op} block_size = 1 is a no-op.")
    if size < 1:
        raise Unsupported(f"{sig.op} block_size must be > 1.")


def _lstm(sig: Sig) -> None:
    activation = _opt(sig, "fusedActivationFunction")
    if _opt(sig, "kernelType") == 0:  # full kernel
        if len(sig.inputs) not in (20, 24):
            raise Unsupported(f"Expected 20 or 24 input tensors, but node has "
                              f"{len(sig.inputs)} input(s).")
        if len(sig.outputs) != 1:
            raise Unsupported(f"Expected 1 output tensor, but node has {len(sig.outputs)} "
                              "output(s).")
        if activation not in (4, 6):  # TANH; SIGMOID is not in the flatbuffer enum
            raise Unsupported("Only sigmoid or tanh activation is supported, but node has "
                              f"{activation}")
        return
    _io_consts(sig, 3, 2, 4)
    if activation != 4:
        raise Unsupported(f"Only TANH activation is supported. but node has {activation}")
    if _opt(sig, "cellClip", 0.0) != 0.0:
        raise Unsupported("cell_clip is not supported.")
    if _opt(sig, "projClip", 0.0) != 0.0:
        raise Unsupported("proj_clip is not supported.")

