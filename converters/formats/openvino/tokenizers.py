"""openvino-tokenizers (in the `openvino` extra): OpenVINO's extension with TensorFlow-frontend
rules for string ops (StringLower, StaticRegexReplace, StringSplitV2, lookup tables,
RaggedTensorToTensor, ...) and the CPU kernels that run them. Importing the package registers
it with every `ov.Core` and frontend made afterwards; it is imported only for a graph with
string tensors and for an IR that uses its ops (`version="extension"` in the `.xml`)."""

from __future__ import annotations

from graphfreeze.errors import ConfigError

PACKAGE = "openvino-tokenizers"
_STRING = 7  # types_pb2.DT_STRING


def has_strings(graph_def) -> bool:
    """Whether a node of the graph (or of a function it defines) has a string-typed attr: a
    string tensor, a table of strings, a string op's input or output."""
    nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
    return any(value.type == _STRING or _STRING in value.list.type
               for node in nodes for value in node.attr.values())


def load() -> bool:
    """Register the extension (True), or False when the package is not installed."""
    try:
        import openvino_tokenizers  # noqa: F401 -- registers itself with Core and FrontEnd
    except ImportError:
        return False
    return True


def hint() -> str:
    """What to add to a refusal of a graph with strings when the extension is missing."""
    return "" if load() else (f"; {PACKAGE} (not installed) converts string ops: pip install "
                              "'graphfreeze[openvino]'")


def extension_ops(model) -> list[str]:
    """The op types of an `ov.Model` that come from an extension, sorted."""
    return sorted({op.get_type_name() for op in model.get_ordered_ops()
                   if op.get_type_info().version_id == "extension"})


def load_for(xml_path: str) -> None:
    """Register the extension before an IR that uses it is read; ConfigError naming the
    package when it is not installed."""
    with open(xml_path, "rb") as f:
        if b'version="extension"' not in f.read() or load():
            return
    raise ConfigError(f"{xml_path} uses ops of OpenVINO's tokenizer extension, which run with "
                      f"{PACKAGE}, not installed; pip install 'graphfreeze[openvino]'")
