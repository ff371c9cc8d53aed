"""Op libraries beyond TensorFlow's own ops that a model may use: TF-Text's ops, registered by
importing `tensorflow_text` (the `text` extra). A library is loaded by importing the package
that registers it -- never a shared object the model file names -- and only when a graph uses
one of its ops; without the package, one line names the op and the extra (exit 6)."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError, install_hint

TEXT_PACKAGE = "tensorflow-text"  # the pip name; `tensorflow_text` is its module
TEXT_EXTRA = "text"
# The ops `import tensorflow_text` registers (2.21; tests/graph/test_op_libraries.py checks
# them against the live registry).
TEXT_OPS = frozenset({
    "CaseFoldUTF8", "ConstrainedSequence", "FastBertNormalize", "FastWordpieceTokenizeWithOffsets",
    "FindSourceOffsets", "MaxSpanningTree", "NormalizeUTF8", "NormalizeUTF8WithOffsetsMap",
    "PhraseTokenize", "RegexSplitWithOffsets", "RougeL", "SentenceFragments",
    "SentenceFragmentsV2", "SentencepieceDetokenizeOp", "SentencepieceIdToStringOp",
    "SentencepieceOp", "SentencepieceStringToIdOp", "SentencepieceTokenizeOp",
    "SentencepieceTokenizeWithOffsetsOp", "SentencepieceVocabSizeOp",
    "SplitMergeTokenizeWithOffsets", "TFText>BoiseTagsToOffsets", "TFText>ByteSplitByOffsets",
    "TFText>ByteSplitWithOffsets", "TFText>FastSentencepieceDetokenize",
    "TFText>FastSentencepieceTokenize", "TFText>FastWordpieceDetokenize",
    "TFText>NgramsStringJoin", "TFText>OffsetsToBoiseTags", "TFText>PhraseDetokenize",
    "TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim", "TFText>Utf8Binarize",
    "TFText>WhitespaceTokenizeWithOffsetsV2", "TokenizerFromLogits",
    "UnicodeScriptTokenizeWithOffsets", "WhitespaceTokenizeWithOffsets",
    "WordpieceTokenizeWithOffsets"})

# Which formats take these ops each format's folder says (`text_ops.takes`); `takers` asks them.
# TF-Text ops with a TFLite kernel in `tensorflow_text.tflite_registrar` (the TFLite custom op
# has the TensorFlow op's name), RaggedTensorToTensor beside them (a TensorFlow op TFLite's
# builtins lack, which TF-Text's registrar runs too)
TFLITE_KERNELS = frozenset({
    "FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "TFText>FastWordpieceDetokenize",
    "TFText>FastSentencepieceTokenize", "TFText>FastSentencepieceDetokenize",
    "TFText>WhitespaceTokenizeWithOffsetsV2", "TFText>NgramsStringJoin",
    "TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim", "TFText>Utf8Binarize",
    "TFText>ByteSplitWithOffsets", "TFText>ByteSplitByOffsets", "SentenceFragmentsV2",
    "RaggedTensorToTensor"})
# TF-Text ops tf2onnx maps to onnxruntime-extensions' `ai.onnx.contrib` ops
# (tf2onnx/custom_opsets/string_ops.py)
ONNX_CONTRIB = frozenset({"SentencepieceOp", "SentencepieceTokenizeOp", "RegexSplitWithOffsets",
                          "WordpieceTokenizeWithOffsets"})


class Untaken(InputError):
    """A format's refusal of op-library op `op`; `{takers}` in its text is what takes it: the
    run names those targets (`named`), asking every format (`Format.takes`); said in general
    words until then."""

    def __init__(self, text: str, op: str):
        super().__init__(text.replace("{takers}", "a target whose format runs it (freeze targets)"))
        self.text, self.op = text, op

    def __reduce__(self):  # (sent back from a worker process whole, named or not)
        return _untaken, (self.text, self.op, self.args)

    def named(self, registry) -> Untaken:
        """Itself, said with the targets that take the op."""
        self.args = (self.text.replace("{takers}", takers(self.op, registry)),)
        return self


def _untaken(text: str, op: str, args: tuple) -> Untaken:
    err = Untaken(text, op)
    err.args = args
    return err


def takers(op: str, registry) -> str:
    """The targets that run op-library op `op`, in words ("the android, onnx or server
    target"): of each format whose folder says it takes it, its shortest-named target."""
    import contextlib

    found: dict[str, str] = {}
    for name in registry.target_names():
        for use in registry.target(name).stages:
            with contextlib.suppress(ConfigError):
                fmt = registry.format_of(use.use)
                if fmt is not None and fmt.takes(op):
                    known = found.get(fmt.name, name)
                    found[fmt.name] = min(known, name, key=lambda t: (len(t), t))
    names = sorted(found.values())
    if not names:
        return "no target"
    return f"the {', '.join(names[:-1])} or {names[-1]} target" if len(names) > 1 else \
        f"the {names[0]} target"


def library_of(op: str) -> str | None:
    """The pip package whose import registers `op`, or None (TensorFlow's own, or unknown)."""
    return TEXT_PACKAGE if op in TEXT_OPS or op.startswith("TFText>") else None


def ops_used(graph_def) -> set[str]:
    """Every op type in the graph and in its function library's bodies."""
    ops = {node.op for node in graph_def.node}
    for func in graph_def.library.function:
        ops.update(node.op for node in func.node_def)
    return ops - {f.signature.name for f in graph_def.library.function}


def text_ops(graph_def) -> list[str]:
    """The TF-Text ops the graph (or a function it defines) uses, sorted."""
    return sorted(op for op in ops_used(graph_def) if library_of(op))


def load(op: str, at: str) -> bool:
    """Register the library that may define `op`, an op TensorFlow does not (True: ask the
    registry again), or False. A TF-Text op (listed, or `TFText>` named) needs tensorflow-text:
    ConfigError, naming `at` (the node) and the extra, without it; any other unknown op is
    looked up in tensorflow-text too when it is installed (ops of newer TF-Text releases)."""
    import importlib.util

    known = op in TEXT_OPS or op.startswith("TFText>")
    if not known and importlib.util.find_spec("tensorflow_text") is None:
        return False
    try:
        import tensorflow_text  # noqa: F401 -- registers the TF-Text ops with TensorFlow
    except ImportError as err:
        if not known:
            return False
        raise ConfigError(f"{at} uses op '{op}' of TF-Text ({TEXT_PACKAGE}), which is not "
                          f"installed; {install_hint(TEXT_EXTRA)}") from err
    return True


def op_def_of(op: str, at: str = ""):
    """TensorFlow's OpDef of `op`, its library loaded first when TensorFlow lacks it and `at`
    (the node using it) is given; None if none defines it. Without TensorFlow imported, the
    floor's snapshot of its registry answers (loading a library imports TensorFlow)."""
    from graphfreeze.proto.ops import op_def

    found = op_def(op)
    if found is None and at and load(op, at):
        found = op_def(op)
    return found


def load_for(graph_def, where: str) -> list[str]:
    """Register every library the graph's ops need; the pip packages it needs, sorted."""
    used = text_ops(graph_def)
    if used:
        load(used[0], f"{where}: the graph")
    return [TEXT_PACKAGE] if used else []


def runtime_needs(graph_def) -> tuple[dict, tuple[str, ...]]:
    """(sidecar facts, summary lines) naming the op library a TensorFlow runtime needs to run
    the graph; ({}, ()) for a graph of TensorFlow's own ops."""
    used = text_ops(graph_def)
    if not used:
        return {}, ()
    shown = ", ".join(used[:3]) + (", ..." if len(used) > 3 else "")
    return ({"op_libraries": [TEXT_PACKAGE], "library_ops": used},
            (f"needs TF-Text's ops ({shown}) at run time: pip install {TEXT_PACKAGE} and "
             "`import tensorflow_text` before loading it",))
