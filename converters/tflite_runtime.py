"""The one place a TFLite interpreter is made: LiteRT's (`ai_edge_litert`, the runtime TensorFlow
2.21 points to in place of the deprecated `tf.lite.Interpreter`), or TensorFlow's own when
`ai_edge_litert` is not installed (it is in the `convert` extra).

Neither runs Flex (SELECT_TF_OPS) models: LiteRT 2.3.0 ships no Flex delegate and the
TensorFlow 2.21 wheel no `_pywrap_tensorflow_lite_flex`, so no library in the process defines
`TF_AcquireFlexDelegate` and `allocate_tensors` fails with "Select TensorFlow op(s) ... not
supported by this interpreter" (see `is_flex_error`).
"""

from __future__ import annotations

FLEX_ERROR = "Select TensorFlow op"


def interpreter_class() -> type:
    """LiteRT's Interpreter class, or tf.lite.Interpreter without ai_edge_litert."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        import tensorflow as tf

        return tf.lite.Interpreter
    return Interpreter


def interpreter(model_path: str | None = None, model_content: bytes | None = None,
                num_threads: int = 2, preserve_all_tensors: bool = False):
    """An interpreter on a flatbuffer file or its bytes (tensors not yet allocated)."""
    from graphfreeze.quiet import native_stderr_off

    with native_stderr_off():
        return interpreter_class()(model_path=model_path, model_content=model_content,
                                   num_threads=num_threads,
                                   experimental_preserve_all_tensors=preserve_all_tensors)


def is_flex_error(err: BaseException) -> bool:
    """Whether `err` (from allocate_tensors) says the model needs the Flex delegate."""
    return FLEX_ERROR in str(err)
