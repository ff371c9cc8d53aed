"""TF-Text ops in ONNX: tf2onnx maps a few to onnxruntime-extensions' `ai.onnx.contrib` ops
(`op_libraries.ONNX_CONTRIB`: SentencePiece, WordPiece, regex split) when that opset is asked
for; onnxruntime runs them with onnxruntime-extensions' library registered
(`get_library_path()`). Any other TF-Text op is refused before converting, in one line."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError

CONTRIB = "ai.onnx.contrib"
# the onnxruntime-extensions ops tf2onnx writes for TF-Text's (custom_opsets/string_ops.py)
CONTRIB_TEXT_OPS = frozenset({"SentencepieceTokenizer", "WordpieceTokenizer",
                              "StringRegexSplitWithOffsets"})


def extra_opsets(graph_def, where: str) -> list:
    """The opsets tf2onnx needs beyond the standard one for the graph's TF-Text ops ([] without
    any); InputError for a TF-Text op tf2onnx does not map."""
    from graphfreeze.graph.op_libraries import ONNX_CONTRIB, takers, text_ops

    used = text_ops(graph_def)
    if not used:
        return []
    missing = [op for op in used if op not in ONNX_CONTRIB]
    if missing:
        op = missing[0]
        nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
        node = next(n.name for n in nodes if n.op == op)
        raise InputError(f"{where}: node '{node}' has TF-Text op '{op}', which tf2onnx maps to "
                         f"no ONNX or onnxruntime-extensions op; use {takers(op)}")
    from tf2onnx import utils

    return [utils.make_opsetid(CONTRIB, 1)]


def uses_contrib(model) -> bool:
    """Whether an ONNX ModelProto imports onnxruntime-extensions' opset."""
    return any(o.domain == CONTRIB for o in model.opset_import)


def register(options) -> None:
    """onnxruntime-extensions' custom op library into onnxruntime SessionOptions; ConfigError
    naming the extra without it."""
    from graphfreeze.graph.op_libraries import TEXT_EXTRA

    try:
        from onnxruntime_extensions import get_library_path
    except ImportError as err:
        raise ConfigError(f"the model uses {CONTRIB} ops (TF-Text's tokenizers), which run in "
                          "onnxruntime-extensions, not installed; pip install "
                          f"'graphfreeze[{TEXT_EXTRA}]'") from err
    options.register_custom_ops_library(get_library_path())


def runtime_needs(model) -> tuple[dict, tuple[str, ...]]:
    """(sidecar facts, summary lines) naming onnxruntime-extensions for a model that uses it."""
    if not uses_contrib(model):
        return {}, ()
    ops = sorted({n.op_type for n in model.graph.node if n.domain == CONTRIB})
    return ({"op_libraries": ["onnxruntime-extensions"], "custom_ops": ops},
            (f"{CONTRIB} ops ({', '.join(ops)}): register onnxruntime-extensions' library "
             "(SessionOptions.register_custom_ops_library(onnxruntime_extensions."
             "get_library_path()))",))
