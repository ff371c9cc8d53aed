"""The one place a TFLite interpreter is made: LiteRT's (`ai_edge_litert`, the runtime TensorFlow
2.21 points to in place of the deprecated `tf.lite.Interpreter`), or TensorFlow's own when
`ai_edge_litert` is not installed (it is in the `convert` extra). A model with TF-Text custom
ops gets TF-Text's kernels as custom op registerers (`text_ops.registerers`).

Neither runs Flex (SELECT_TF_OPS) models: LiteRT 2.3.0 ships no Flex delegate and the
TensorFlow 2.21 wheel no `_pywrap_tensorflow_lite_flex`, so no library in the process defines
`TF_AcquireFlexDelegate` and `allocate_tensors` fails with "Select TensorFlow op(s) ... not
supported by this interpreter" (see `is_flex_error`).
"""

from __future__ import annotations

FLEX_ERROR = "Select TensorFlow op"


def interpreter_class(custom_ops: bool = False) -> type:
    """LiteRT's Interpreter class, or tf.lite.Interpreter without ai_edge_litert; their
    InterpreterWithCustomOps for a model with custom ops (TF-Text's)."""
    try:
        import ai_edge_litert.interpreter as litert
    except ImportError:
        import tensorflow as tf

        if not custom_ops:
            return tf.lite.Interpreter
        from tensorflow.lite.python import interpreter as litert
    return litert.InterpreterWithCustomOps if custom_ops else litert.Interpreter


def interpreter(model_path: str | None = None, model_content: bytes | None = None,
                num_threads: int = 2, preserve_all_tensors: bool = False):
    """An interpreter on a flatbuffer file or its bytes (tensors not yet allocated), with
    TF-Text's kernels registered when the model uses TF-Text custom ops."""
    import warnings

    from graphfreeze.formats.tflite.text_ops import registerers
    from graphfreeze.process.quiet import native_stderr_off

    custom = registerers(model_path if model_content is None else model_content)
    extra = {"custom_op_registerers": custom} if custom else {}
    with native_stderr_off(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # preserve_all_tensors "is for debugging": it is here
        return interpreter_class(bool(custom))(
            model_path=model_path, model_content=model_content, num_threads=num_threads,
            experimental_preserve_all_tensors=preserve_all_tensors, **extra)


def is_flex_error(err: BaseException) -> bool:
    """Whether `err` (from allocate_tensors) says the model needs the Flex delegate."""
    return FLEX_ERROR in str(err)


class FlexOpsError(RuntimeError):
    """The model needs the Flex delegate, which neither interpreter here has."""


class ArtifactRunError(RuntimeError):
    """The interpreter cannot run the model (prepare or invoke failed): str() is its first line."""


def invoke(path: str, feeds: dict, preserve_all_tensors: bool = False, interp=None):
    """The interpreter on `path` after one invoke on `feeds` ({input tensor name: array}): inputs
    resized to the feeds' shapes, int8 inputs quantized; `interp`, one already allocated at
    those shapes, is reused. FlexOpsError for a Flex model, ArtifactRunError when the
    interpreter cannot prepare or run it at those shapes."""
    from graphfreeze.errors import first_line
    from graphfreeze.process.quiet import native_stderr_off

    fresh = interp is None
    if fresh:
        interp = interpreter(model_path=path, preserve_all_tensors=preserve_all_tensors)
    with native_stderr_off():
        details = input_details(interp, list(feeds))
        try:
            if fresh:
                for name, value in feeds.items():
                    if tuple(details[name]["shape"]) != value.shape:
                        interp.resize_tensor_input(details[name]["index"], value.shape)
                interp.allocate_tensors()
            for name, value in feeds.items():
                interp.set_tensor(details[name]["index"], quantize(value, details[name]))
            interp.invoke()
        except (RuntimeError, ValueError) as err:
            if is_flex_error(err):
                raise FlexOpsError(str(err)) from err
            raise ArtifactRunError(first_line(err)) from err
    return interp


def input_details(interp, names: list[str]) -> dict:
    """{name: input detail} for `names` (see `by_name`)."""
    return by_name(interp.get_input_details(), names)


def by_name(listed: list, names: list[str]) -> dict:
    """{name: detail} for `names` (a node's name, or its tensor's: `x:0`, as the converter names
    a SavedModel's ragged components); by position if the converter renamed the tensors (a
    concrete function's become `serving_default_x:0`)."""
    details = {**{d["name"].removesuffix(":0"): d for d in listed},
               **{d["name"]: d for d in listed}}
    if any(n not in details for n in names):
        return dict(zip(names, listed, strict=True))
    return details


def input_shapes(path: str, names: list[str]) -> dict:
    """{input name: the shape the flatbuffer was converted at}."""
    details = input_details(interpreter(model_path=path), names)
    return {n: tuple(int(x) for x in details[n]["shape"]) for n in names}


def _reused(path: str, feeds: dict, preserve_all_tensors: bool, reuse: dict | None):
    """invoke(), on the interpreter `reuse` kept from the last call when the file and the feeds'
    shapes are the same (verification runs the user's data in chunks: one interpreter, and one
    XNNPack weight packing, for all of them)."""
    if reuse is None:
        return invoke(path, feeds, preserve_all_tensors)
    import os

    stat = os.stat(path)
    key = (stat.st_mtime_ns, stat.st_size, tuple((n, v.shape) for n, v in feeds.items()))
    interp = invoke(path, feeds, preserve_all_tensors, reuse.get(key))
    if key not in reuse:
        reuse.clear()
        reuse[key] = interp
    return interp


def run_batched(path: str, feeds: dict, fetch, preserve_all_tensors: bool = False,
                reuse: dict | None = None) -> dict:
    """`fetch(interp)` ({name: array}) after invoking on `feeds` (`reuse`: see `_reused`). A
    model converted at batch 1 that cannot run at the feeds' batch (ops whose shapes the
    converter fixed: a Reshape to [1, N], XNNPack refusing to reshape), or that runs but folds
    the batch into another axis (an output whose leading dim is not the batch: a Reshape to
    [1, -1, C]), runs one row at a time at the shape it has, and the rows' values that carry
    the batch (leading dim 1) are stacked; ArtifactRunError if that fails too."""
    import numpy as np

    count = {int(v.shape[0]) for v in feeds.values() if v.ndim}
    count = count.pop() if len(count) == 1 and all(v.ndim for v in feeds.values()) else 1
    got, error = None, None
    try:
        interp = _reused(path, feeds, preserve_all_tensors, reuse)
        got = fetch(interp)
        if count == 1 or not _batch_folded(path, interp, feeds, count):
            return got
    except ArtifactRunError as err:
        shapes = input_shapes(path, list(feeds))
        if count == 1 or any(shapes[n][:1] != (1,) or shapes[n][1:] != v.shape[1:]
                             for n, v in feeds.items()):
            raise
        error = err
    try:
        interp, parts = None, []
        for k in range(count):  # one interpreter, allocated once, invoked per row
            interp = invoke(path, {n: v[k:k + 1] for n, v in feeds.items()},
                            preserve_all_tensors, interp)
            parts.append(fetch(interp))
    except ArtifactRunError as err:
        if got is not None:
            return got
        raise err from error
    if got is not None and any(d["shape"][:1].tolist() != [1]
                               for d in interp.get_output_details()):
        return got  # an output without a batch at batch 1 either: not a folded batch
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]
            if all(name in p and np.ndim(p[name]) and np.shape(p[name])[0] == 1
                   for p in parts)}


def _batch_folded(path: str, interp, feeds: dict, count: int) -> bool:
    """Whether a model converted at batch 1 (its inputs' leading dim fixed at 1) ran at batch
    `count` with an output whose leading dim is not `count` (the batch went into another axis)."""
    if all(list(d["shape"][:1]) == [count] for d in interp.get_output_details()):
        return False
    shapes = input_shapes(path, list(feeds))
    return all(shapes[n][:1] == (1,) and shapes[n][1:] == v.shape[1:] for n, v in feeds.items())


def output_values(interp, names: list[str]) -> list:
    """The named outputs, dequantized; by position if the converter renamed them."""
    import numpy as np

    details = by_name(interp.get_output_details(), names)
    return [np.asarray(dequantize(interp.get_tensor(details[n]["index"]), details[n]))
            for n in names]


def quantize(value, detail):
    """A float array as an int8/uint8/int16 input tensor wants it (scale, zero point)."""
    import numpy as np

    scale, zero = detail["quantization"]
    if detail["dtype"] in (np.int8, np.uint8, np.int16) and scale:
        info = np.iinfo(detail["dtype"])
        return np.clip(np.round(value / scale + zero), info.min, info.max).astype(detail["dtype"])
    return value.astype(detail["dtype"])


def dequantize(value, detail):
    """An int8/uint8/int16 tensor's real values."""
    import numpy as np

    scale, zero = detail["quantization"]
    if value.dtype in (np.int8, np.uint8, np.int16) and scale:
        return (value.astype(np.float32) - zero) * scale
    return value
