"""TF-Text and string ops in ONNX: tf2onnx maps a few TF-Text ops (`op_libraries.ONNX_CONTRIB`:
SentencePiece, WordPiece, regex split) and TensorFlow's string ops (StringSplitV2, hashing,
regex replace, joins) to onnxruntime-extensions' `ai.onnx.contrib` ops when that opset is asked
for; onnxruntime runs them with onnxruntime-extensions' library registered
(`get_library_path()`). Any other TF-Text op is refused before converting, in one line."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError

CONTRIB = "ai.onnx.contrib"
# the onnxruntime-extensions ops tf2onnx writes (custom_opsets/string_ops.py)
CONTRIB_OPS = frozenset({"SentencepieceTokenizer", "WordpieceTokenizer",
                         "StringRegexSplitWithOffsets", "StringSplit", "StringToHashBucketFast",
                         "StringRegexReplace", "StringJoin", "StringEqual"})
# ops whose onnxruntime-extensions kernel computes something else than TensorFlow's kernel
_DIFFERENT = {"StringToHashBucketFast": "onnxruntime-extensions' kernel, which tf2onnx maps it "
              "to, puts strings in other buckets than TensorFlow's (another hash function)",
              "StringSplitV2": "with an empty separator TensorFlow splits on whitespace, but "
              "onnxruntime-extensions' StringSplit, which tf2onnx maps it to, into characters"}


def _contrib_only() -> set[str]:
    """TensorFlow ops tf2onnx maps only to `ai.onnx.contrib` ops (StringSplitV2,
    StringToHashBucketFast, StaticRegexReplace, ...): handlers it registers for that domain
    alone (custom_opsets/string_ops.py)."""
    import tf2onnx.tfonnx  # noqa: F401 -- importing it registers every op handler
    from tf2onnx import constants, handler

    opsets = handler.tf_op.get_opsets()
    ops = {domain: {op for handlers in versions for op in handlers}
           for domain, versions in opsets.items()}
    return ops.get(CONTRIB, set()) - ops.get(constants.ONNX_DOMAIN, set())


def extra_opsets(graph_def, where: str) -> list:
    """The opsets tf2onnx needs beyond the standard one for the graph's TF-Text ops and the
    string ops it maps to onnxruntime-extensions ([] without any); InputError for a TF-Text op
    tf2onnx does not map, or an op whose mapping computes something else."""
    from graphfreeze.graph.op_libraries import ONNX_CONTRIB, ops_used, takers, text_ops

    used = text_ops(graph_def)
    contrib = ops_used(graph_def) & _contrib_only()
    different = next(_differing(graph_def, contrib), None)
    if different is not None:
        raise InputError(f"{where}: node '{different.name}' ({different.op}): "
                         f"{_DIFFERENT[different.op]}; use the android, server or openvino target")
    missing = [op for op in used if op not in ONNX_CONTRIB]
    if missing:
        op = missing[0]
        raise InputError(f"{where}: node '{_node_of(graph_def, op)}' has TF-Text op '{op}', "
                         f"which tf2onnx maps to no ONNX or onnxruntime-extensions op; use "
                         f"{takers(op)}")
    return [_opset()] if used or contrib else []


def _differing(graph_def, contrib: set[str]):
    """The nodes whose onnxruntime-extensions op would compute something else (`_DIFFERENT`):
    every StringToHashBucketFast; a StringSplitV2 unless its separator is a non-empty Const."""
    from graphfreeze.graph.consts import const_value

    by_name = {n.name: n for n in graph_def.node}
    bodies = [n for f in graph_def.library.function for n in f.node_def]
    for node in [*graph_def.node, *bodies]:
        if node.op not in contrib or node.op not in _DIFFERENT:
            continue
        sep = const_value(by_name, node.input[1]) if node.op == "StringSplitV2" and \
            node.name in by_name else None
        if sep is None or sep.size != 1 or sep.item() == b"":
            yield node


def _node_of(graph_def, op: str) -> str:
    """The name of the first node (of the graph or a function body) of type `op`."""
    nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
    return next(n.name for n in nodes if n.op == op)


def _opset():
    from tf2onnx import utils

    return utils.make_opsetid(CONTRIB, 1)


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

