"""Shape functions of convolutions, pooling and bias (tensorflow/core/framework/
common_shape_fns.cc). NHWC and NCHW only; explicit padding is left to TensorFlow."""

from __future__ import annotations

from graphfreeze.graph.shapes.context import shape_fn
from graphfreeze.graph.shapes.dims import (
    ShapeError,
    Unsupported,
    merge_dim,
    multiply,
    windowed,
    with_rank,
    with_rank_at_least,
)

_AXES = {"NHWC": "NHWC", "NCHW": "NCHW"}  # data format -> the letter of each axis


def _format(c, conv: bool) -> str:
    name = c.attr("data_format") if any(a.name == "data_format" for a in c.op_def.attr) \
        else "NHWC"
    if name not in _AXES:
        if conv and name not in ("NCHW_VECT_C", "NHWC_VECT_W"):
            raise ShapeError(f"Invalid data format string: {name}")
        raise Unsupported(f"data format {name}")
    return name


def _padding(c) -> str:
    padding = c.attr("padding")
    if padding == "EXPLICIT":
        raise Unsupported("explicit padding")
    if any(a.name == "explicit_paddings" for a in c.op_def.attr) and c.attr("explicit_paddings"):
        raise ShapeError("explicit_paddings attribute must be empty if the padding attribute is "
                         "not EXPLICIT")
    return padding


def _four(c, attr: str, what: str, default=None) -> list:
    values = c.attr(attr) if default is None or any(a.name == attr for a in c.op_def.attr) \
        else default
    if len(values) != 4:
        raise ShapeError(f"{what} requires the {attr} attribute to contain 4 values, but got: "
                         f"{len(values)}")
    return values


def _shape(fmt: str, n, h, w, ch) -> tuple:
    return (n, h, w, ch) if fmt == "NHWC" else (n, ch, h, w)


@shape_fn("Conv2D")
def conv2d(c):
    """Conv2DShapeImpl."""
    fmt = _format(c, True)
    given, kernel = with_rank(c.shapes[0], 4), with_rank(c.shapes[1], 4)
    dilations = _four(c, "dilations", "Conv2D")
    strides = c.attr("strides")
    if len(strides) != 4:
        raise ShapeError(f"Conv2D on data format {fmt} requires the stride attribute to "
                         f"contain 4 values, but got: {len(strides)}")
    h, w = fmt.index("H"), fmt.index("W")
    depth, out_depth = given[fmt.index("C")], kernel[3]
    if depth is not None and kernel[2] is not None:
        if kernel[2] == 0:
            raise ShapeError("Depth of filter must not be 0")
        if depth % kernel[2]:
            raise ShapeError(f"Depth of input ({depth}) is not a multiple of input depth of "
                             f"filter ({kernel[2]})")
        groups = depth // kernel[2]
        if depth != kernel[2] and out_depth is not None and out_depth % groups:
            raise ShapeError(f"Depth of output ({out_depth}) is not a multiple of the number "
                             f"of groups ({groups})")
    padding = _padding(c)
    rows = windowed(given[h], kernel[0], dilations[h], strides[h], padding)
    cols = windowed(given[w], kernel[1], dilations[w], strides[w], padding)
    return [_shape(fmt, given[0], rows, cols, out_depth)]


@shape_fn("DepthwiseConv2dNative")
def depthwise(c):
    """DepthwiseConv2DNativeShapeImpl."""
    given, kernel = with_rank(c.shapes[0], 4), with_rank(c.shapes[1], 4)
    strides = _four(c, "strides", "DepthwiseConv2D")
    dilations = _four(c, "dilations", "DepthwiseConv2D", [1, 1, 1, 1])
    fmt = "NCHW" if c.attr("data_format") == "NCHW" else "NHWC"
    h, w = fmt.index("H"), fmt.index("W")
    depth = merge_dim(given[fmt.index("C")], kernel[2])
    out_depth = multiply(depth, kernel[3])
    padding = _padding(c)
    rows = windowed(given[h], kernel[0], dilations[h], strides[h], padding)
    cols = windowed(given[w], kernel[1], dilations[w], strides[w], padding)
    return [_shape(fmt, given[0], rows, cols, out_depth)]


@shape_fn("MaxPool", "AvgPool")
def pool(c):
    """MaxPoolShapeImpl / AvgPoolShape."""
    fmt = _format(c, False)
    given = with_rank(c.shapes[0], 4)
    strides = _four(c, "strides", c.node.op)
    sizes = _four(c, "ksize", c.node.op)
    padding = _padding(c)
    h, w, ch = fmt.index("H"), fmt.index("W"), fmt.index("C")
    rows = windowed(given[h], sizes[h], 1, strides[h], padding)
    cols = windowed(given[w], sizes[w], 1, strides[w], padding)
    depth = given[ch]
    if c.node.op == "MaxPool":
        depth = windowed(depth, sizes[ch], 1, strides[ch], padding)
    return [_shape(fmt, given[0], rows, cols, depth)]


@shape_fn("BiasAdd")
def bias_add(c):
    nchw = c.attr("data_format") == "NCHW"
    given = with_rank_at_least(c.shapes[0], 3 if nchw else 2)
    bias = with_rank(c.shapes[1], 1)
    if given is None:
        return [None]
    at = 1 if nchw else len(given) - 1
    return [(*given[:at], merge_dim(given[at], bias[0]), *given[at + 1:])]


@shape_fn("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(c):
    """FusedBatchNormShape (V3: a sixth output of unknown shape)."""
    fmt = c.attr("data_format")
    if fmt not in _AXES:
        if fmt in ("NDHWC", "NCDHW"):
            raise Unsupported("5-D batch norm")
        raise ShapeError(f"Invalid data format string: {fmt}")
    given = with_rank(c.shapes[0], 4)
    average = c.attr("exponential_avg_factor") if any(
        a.name == "exponential_avg_factor" for a in c.op_def.attr) else 1.0
    inputs = 3 if c.attr("is_training") and average == 1.0 else 5
    at = fmt.index("C")
    channels = given[at]
    for shape in c.shapes[1:inputs]:
        channels = merge_dim(channels, with_rank(shape, 1)[0])
    y = (*given[:at], channels, *given[at + 1:])
    return [y, *[(channels,)] * 4, *([None] if c.node.op == "FusedBatchNormV3" else [])]
