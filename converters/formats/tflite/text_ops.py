"""TF-Text ops in TFLite. TF-Text ships TFLite kernels for some of its ops
(`tensorflow_text.tflite_registrar`; `op_libraries.TFLITE_KERNELS`): the converter writes those
as custom ops (`allow_custom_ops`, as TF-Text's guide converts), and LiteRT's interpreter runs
them with `tflite_registrar.SELECT_TFTEXT_OPS` as its custom op registerers. A TF-Text op
without a kernel is refused before converting, in one line naming the op and what takes it."""

from __future__ import annotations

from graphfreeze.errors import InputError, install_hint
from graphfreeze.graph.graphdefs import first_of_op
from graphfreeze.graph.op_libraries import TFLITE_KERNELS as KERNELS
from graphfreeze.graph.op_libraries import Untaken, text_ops

# TF-Text ops without a TFLite kernel -> the TF-Text class whose op has one
INSTEAD = {
    "SentencepieceOp": "FastSentencepieceTokenizer", "SentencepieceTokenizeOp":
    "FastSentencepieceTokenizer", "SentencepieceDetokenizeOp": "FastSentencepieceTokenizer",
    "WordpieceTokenizeWithOffsets": "FastWordpieceTokenizer", "NormalizeUTF8":
    "FastBertNormalizer", "CaseFoldUTF8": "FastBertNormalizer", "WhitespaceTokenizeWithOffsets":
    "WhitespaceTokenizer (tensorflow-text >= 2.7)", "SentenceFragments": "SentenceFragmenterV2"}


def takes(op: str) -> bool:
    """The TF-Text ops a .tflite runs: those with a kernel in TF-Text's tflite_registrar."""
    return op in KERNELS


def prepare(conv, graph_def, where: str) -> None:
    """Let the converter write the graph's TF-Text ops as custom ops; InputError for one that no
    TF-Text TFLite kernel runs."""
    used = text_ops(graph_def)
    if not used:
        return
    missing = [op for op in used if op not in KERNELS]
    if missing:
        op = missing[0]
        node = first_of_op(graph_def, op)
        instead = f"build the tokenizer with TF-Text's {INSTEAD[op]}, which has one, " \
            if op in INSTEAD else ""
        raise Untaken(
            f"{where}: node '{node}' has TF-Text op '{op}', which TFLite has no kernel for "
            f"(TF-Text's TFLite kernels: tflite_registrar); {instead}use {{takers}}, or a "
            "TFLite runtime built with a Flex delegate holding TF-Text's kernels", op)
    conv.allow_custom_ops = True
    from tensorflow_text import tflite_registrar  # loaded with the graph's ops

    # int8 calibration runs the model: TF-Text's kernels registered there too
    conv.target_spec._experimental_custom_op_registerers = list(  # noqa: SLF001
        tflite_registrar.SELECT_TFTEXT_OPS)


def custom_ops(model) -> list[str]:
    """The custom op names a .tflite flatbuffer (its bytes, or a path: mapped, not read) uses."""
    if isinstance(model, str):
        import mmap

        with open(model, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return custom_ops(data)
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError:
        from tensorflow.lite.python import schema_py_generated as schema

    fb = schema.Model.GetRootAs(model, 0)
    names = (fb.OperatorCodes(i).CustomCode() for i in range(fb.OperatorCodesLength()))
    return sorted({n.decode("utf-8", "replace") for n in names if n})


def check_custom_ops(model: bytes, where: str) -> None:
    """InputError if the converter wrote a custom op that no TF-Text kernel runs (allowed custom
    ops take any op the builtins lack; only TF-Text's may stay)."""
    unknown = [op for op in custom_ops(model) if op not in KERNELS]
    if unknown:
        raise InputError(
            f"{where}: TFLite has no kernel for op(s) {', '.join(unknown)} (the converter wrote "
            "them as custom ops beside the TF-Text ones); leave them out of --outputs or use "
            "the android or server target")


def registerers(model) -> list:
    """The custom op registerers LiteRT's interpreter needs for `model` (bytes or a path):
    TF-Text's when it uses
    a TF-Text custom op (ConfigError without tensorflow-text), else none."""
    from graphfreeze.errors import ConfigError
    from graphfreeze.graph.op_libraries import TEXT_EXTRA, TEXT_PACKAGE

    used = [op for op in custom_ops(model) if op in KERNELS]
    if not used:
        return []
    try:
        from tensorflow_text import tflite_registrar
    except ImportError as err:
        raise ConfigError(f"the model uses TF-Text op '{used[0]}', whose TFLite kernel is in "
                          f"{TEXT_PACKAGE}, not installed; "
                          f"{install_hint(TEXT_EXTRA)}") from err
    return list(tflite_registrar.SELECT_TFTEXT_OPS)


def runtime_needs(model: bytes) -> tuple[dict, tuple[str, ...]]:
    """(sidecar facts, summary lines) naming the TF-Text kernels the app must register."""
    from graphfreeze.graph.op_libraries import TEXT_PACKAGE

    used = [op for op in custom_ops(model) if op in KERNELS]
    if not used:
        return {}, ()
    return ({"op_libraries": [TEXT_PACKAGE], "custom_ops": used},
            (f"TF-Text custom ops ({', '.join(used[:3])}{', ...' if len(used) > 3 else ''}): "
             "register TF-Text's TFLite kernels (Python: InterpreterWithCustomOps with "
             "custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)",))
