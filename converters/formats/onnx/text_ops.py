"""TF-Text and string ops in ONNX: tf2onnx maps a few TF-Text ops (`op_libraries.ONNX_CONTRIB`:
SentencePiece, WordPiece, regex split) and TensorFlow's string ops (StringSplitV2, hashing,
regex replace, joins) to onnxruntime-extensions' `ai.onnx.contrib` ops when that opset is asked
for; onnxruntime runs them with onnxruntime-extensions' library registered
(`get_library_path()`). Any other TF-Text op is refused before converting, in one line."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError, install_hint

CONTRIB = "ai.onnx.contrib"
# the onnxruntime-extensions ops tf2onnx writes (custom_opsets/string_ops.py)
CONTRIB_OPS = frozenset({"SentencepieceTokenizer", "WordpieceTokenizer",
                         "StringRegexSplitWithOffsets", "StringSplit", "StringToHashBucketFast",
                         "StringRegexReplace", "StringJoin", "StringEqual"})
_OTHERWISE = ("onnxruntime-extensions' kernel, which tf2onnx maps it to, computes something "
              "else than TensorFlow's: ")


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


def takes(op: str) -> bool:
    """The TF-Text ops an ONNX model runs: those tf2onnx maps to onnxruntime-extensions ops."""
    from graphfreeze.graph.op_libraries import ONNX_CONTRIB

    return op in ONNX_CONTRIB


def extra_opsets(graph_def, where: str) -> list:
    """The opsets tf2onnx needs beyond the standard one for the graph's TF-Text ops and the
    string ops it maps to onnxruntime-extensions ([] without any); InputError for a TF-Text op
    tf2onnx does not map, or an op whose mapping computes something else."""
    from graphfreeze.graph.graphdefs import first_of_op
    from graphfreeze.graph.op_libraries import ONNX_CONTRIB, Untaken, ops_used, text_ops

    used = text_ops(graph_def)
    contrib = ops_used(graph_def) & _contrib_only()
    node, why = next(_differing(graph_def, contrib), (None, ""))
    if node is not None:
        raise InputError(f"{where}: node '{node.name}' ({node.op}): {_OTHERWISE}{why}; use the "
                         "android, server or openvino target")
    missing = [op for op in used if op not in ONNX_CONTRIB]
    if missing:
        op = missing[0]
        raise Untaken(f"{where}: node '{first_of_op(graph_def, op)}' has TF-Text op '{op}', "
                      "which tf2onnx maps to no ONNX or onnxruntime-extensions op; use {takers}",
                      op)
    return [_opset()] if used or contrib else []


def _differing(graph_def, contrib: set[str]):
    """(node, why) for each node whose onnxruntime-extensions op would compute something else:
    every StringToHashBucketFast, and a StringSplitV2 unless it splits on a one-byte Const of
    the graph (its StringSplit splits on each byte of a longer one, on characters for an empty
    one, and has no maxsplit)."""
    from graphfreeze.graph.consts import const_value
    from graphfreeze.graph.graphdefs import all_nodes

    by_name = {n.name: n for n in graph_def.node}
    for k, node in enumerate(all_nodes(graph_def)):
        if node.op not in contrib:
            continue
        in_graph = k < len(graph_def.node)  # a body's inputs name its own nodes
        if node.op == "StringToHashBucketFast":
            yield node, "it puts strings in other buckets (another hash function)"
        elif node.op == "StringSplitV2":
            sep = const_value(by_name, node.input[1]) if in_graph else None
            value = sep.item() if sep is not None and sep.size == 1 else None
            maxsplit = node.attr["maxsplit"].i if "maxsplit" in node.attr else -1
            if value == b"":
                yield node, ("with an empty separator TensorFlow splits on whitespace, "
                             "StringSplit into characters")
            elif value is None:
                yield node, ("StringSplit splits on each byte of a longer separator, and this "
                             "one is not a constant of the graph")
            elif len(value) != 1:
                yield node, (f"TensorFlow splits on the whole separator {value!r}, StringSplit "
                             "on each of its bytes")
            elif maxsplit != -1:
                yield node, f"StringSplit has no maxsplit (this one's is {maxsplit})"


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
        raise ConfigError(f"the model uses {CONTRIB} ops (TF-Text's tokenizers, TensorFlow's "
                          "string ops), which run in onnxruntime-extensions, not installed; "
                          f"{install_hint(TEXT_EXTRA)}") from err
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
