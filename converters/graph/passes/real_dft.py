"""A real FFT read as numbers (Real, Imag, ComplexAbs of an RFFT) rewritten as the DFT it is:
two MatMuls with the DFT's cosine and sine matrices.

Audio front ends compute a power spectrogram from `tf.signal.stft`: keras.layers.MelSpectrogram
(keras.ops.stft returns Real and Imag, squared and summed), hand-written
`tf.math.real(s) ** 2 + tf.math.imag(s) ** 2`, or `tf.abs(s)`. ONNX has no complex numbers, and
tf2onnx converts an RFFT only when every consumer is a ComplexAbs and its input's shape is
known but for the last axis (onnx_opset/signal.py); a batch of unknown size fails it. The onnx
targets (`rewrite_for_onnx`) get the values without complex numbers, as tf2onnx itself computes
them (a DFT matrix product):

    Real(RFFT(x, [N]))  ->  x @ C,  C[j, k] = cos(2 pi j k / N)
    Imag(RFFT(x, [N]))  ->  x @ S,  S[j, k] = -sin(2 pi j k / N)
    ComplexAbs(...)     ->  Sqrt(Square(x @ C) + Square(x @ S))

for j < min(n, N) (RFFT pads or crops x's last axis n to N; rows past it are zero), k <= N / 2.
Each rewritten node keeps its name, so its consumers are unchanged. An RFFT read otherwise, or
whose input's last axis or fft_length is not known, is left as it is.
"""

from __future__ import annotations

from graphfreeze.graph.graphdefs import consumers, copied, extract, free_name, node_of, nodes_by_name
from graphfreeze.graph.passes.contract import PassResult

PARTS = ("Real", "Imag", "ComplexAbs")


def dft_matrices(n: int, length: int, dtype):
    """(cos, -sin) matrices [n, length // 2 + 1] of the real DFT of `length` points of an axis
    of n values (padded or cropped to `length`)."""
    import numpy as np

    j = np.arange(n)[:, None]
    k = np.arange(length // 2 + 1)[None, :]
    angle = 2 * np.pi * ((j * k) % length) / length
    inside = (j < length).astype(np.float64)
    return (np.cos(angle) * inside).astype(dtype), (-np.sin(angle) * inside).astype(dtype)


def _last_dims(graph_def, tensors: list[str]) -> dict[str, int | None]:
    """The static size of each tensor's last axis (TensorFlow's shape inference on the
    subgraph that computes them), None where unknown."""
    import tensorflow as tf

    sub = extract(graph_def, tensors)
    try:
        with tf.Graph().as_default() as graph:
            tf.graph_util.import_graph_def(sub, name="")
            shapes = {t: graph.get_tensor_by_name(t if ":" in t else f"{t}:0").shape
                      for t in tensors}
    except (ValueError, TypeError, KeyError, tf.errors.OpError):
        return dict.fromkeys(tensors)
    return {t: (s[-1] if s.rank else None) for t, s in shapes.items()}


def _rfft_length(node, by_name) -> int | None:
    from graphfreeze.graph.consts import node_value

    length = by_name.get(node_of(node.input[1])) if len(node.input) > 1 else None
    if length is None or length.op != "Const":
        return None
    value = node_value(length).reshape(-1)
    return int(value[0]) if value.size == 1 else None


# the cos and sin matrices of one RFFT at most (a frame's FFT: 512 points, 0.5 MB); a whole clip's
# (48,000 points: 2 x 4.6 GB) is left as an RFFT, for the target to take or refuse in one line
MAX_MATRIX_BYTES = 64 << 20


def _matrix_bytes(n: int, length: int) -> int:
    return 2 * n * (length // 2 + 1) * 4


def rewrite_real_dft(graph_def, keep: list[str], owned: bool = False):
    """Real/Imag/ComplexAbs of an RFFT -> MatMuls with DFT matrices. `owned=True`: in place."""
    del keep  # every rewritten node keeps its name and outputs
    if not any(n.op == "RFFT" for n in graph_def.node):
        return PassResult(graph_def, False)
    by_name = nodes_by_name(graph_def)
    readers = consumers(graph_def)
    found = [n for n in graph_def.node if n.op == "RFFT" and readers.get(n.name) and all(
        by_name[r].op in PARTS and not any(i == f"^{n.name}" for i in by_name[r].input)
        for r in readers[n.name]) and _rfft_length(n, by_name)]
    sizes = _last_dims(graph_def, [n.input[0] for n in found]) if found else {}
    found = [n for n in found if sizes.get(n.input[0]) and
             _matrix_bytes(sizes[n.input[0]], _rfft_length(n, by_name)) <= MAX_MATRIX_BYTES]
    if not found:
        return PassResult(graph_def, False)
    if not owned:
        graph_def = copied(graph_def)
        by_name = nodes_by_name(graph_def)
    taken = set(by_name)
    for rfft in found:
        _rewrite(graph_def, by_name[rfft.name], [by_name[r] for r in readers[rfft.name]],
                 sizes[rfft.input[0]], _rfft_length(rfft, by_name), taken)
    drop = {rfft.name for rfft in found}
    for k in reversed([k for k, n in enumerate(graph_def.node) if n.name in drop]):
        del graph_def.node[k]
    return PassResult(graph_def, True)


def _rewrite(graph_def, rfft, readers, n: int, length: int, taken: set[str]) -> None:
    """The readers of `rfft` (of input x, last axis n) computed from x @ C and x @ S."""
    from graphfreeze.graph.consts import make_const
    from tensorflow.python.framework import dtypes

    real_type = rfft.attr["Treal"].type or dtypes.float32.as_datatype_enum
    numpy_type = dtypes.as_dtype(real_type).as_numpy_dtype
    x = rfft.input[0]

    def add(name: str, op: str, inputs: list[str], **attrs):
        node = graph_def.node.add(name=free_name(name, taken), op=op, input=inputs,
                                  device=rfft.device)
        taken.add(node.name)
        node.attr["T"].type = real_type
        for key, value in attrs.items():
            node.attr[key].b = value
        return node

    parts = {}
    for label, matrix in zip(("real", "imag"), dft_matrices(n, length, numpy_type), strict=True):
        const = make_const(free_name(f"{rfft.name}/dft_{label}", taken), matrix)
        taken.add(const.name)
        graph_def.node.append(const)
        parts[label] = add(f"{rfft.name}/{label}", "BatchMatMulV2", [x, const.name],
                           adj_x=False, adj_y=False).name
    for reader in readers:
        controls = [i for i in reader.input if i.startswith("^")]
        if reader.op == "ComplexAbs":
            squares = [add(f"{reader.name}/{label}_squared", "Square", [parts[label]]).name
                       for label in ("real", "imag")]
            inputs = [add(f"{reader.name}/power", "AddV2", squares).name]
            op = "Sqrt"
        else:
            inputs, op = [parts["real" if reader.op == "Real" else "imag"]], "Identity"
        reader.op = op
        del reader.input[:]
        reader.input.extend([*inputs, *controls])
        reader.attr.clear()
        reader.attr["T"].type = real_type
