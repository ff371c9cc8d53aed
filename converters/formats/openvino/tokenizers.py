"""openvino-tokenizers (in the `openvino` extra): OpenVINO's extension with TensorFlow-frontend
rules for string ops (StringLower, StaticRegexReplace, StringSplitV2, lookup tables,
RaggedTensorToTensor, ...) and the CPU kernels that run them. Importing the package registers
it with every `ov.Core` and frontend made afterwards (the whole process); it is imported for a
graph the extension may be needed for (`needed`: whatever ran before in the process, the same
graph converts the same way) and for an IR that uses its ops (`version="extension"`)."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, RunError, install_hint

PACKAGE = "openvino-tokenizers"
_STRING = 7  # types_pb2.DT_STRING
# the ops without strings the extension translates (its library's TensorFlow-frontend rules)
_NUMERIC_OPS = frozenset({"RaggedTensorToTensor", "RaggedTensorToSparse", "LookupTableFind",
                          "LookupTableFindV2"})


def needed(graph_def) -> bool:
    """Whether the extension may translate some of the graph (or its functions' bodies): a node
    with a string-typed attr (a string tensor, a table of strings, a string op), or a ragged or
    table op."""
    from graphfreeze.graph.graphdefs import all_nodes
    from graphfreeze.graph.op_libraries import ops_used

    return bool(ops_used(graph_def) & _NUMERIC_OPS) or any(
        value.type == _STRING or _STRING in value.list.type
        for node in all_nodes(graph_def) for value in node.attr.values())


def load() -> bool:
    """Register the extension (True), or False when the package is not installed (or not built
    for this OpenVINO)."""
    try:
        import openvino_tokenizers  # registers itself with Core and FrontEnd
    except ImportError:
        return False
    return bool(getattr(openvino_tokenizers, "is_openvino_tokenizers_compatible", True))


def hint() -> str:
    """What to add to a refusal of a graph with strings when the extension is missing."""
    return "" if load() else (f"; {PACKAGE} (not installed) converts string ops: "
                              f"{install_hint('openvino')}")


def extension_ops(model) -> list[str]:
    """The op types of an `ov.Model` that come from an extension, sorted."""
    return sorted({op.get_type_name() for op in model.get_ordered_ops()
                   if op.get_type_info().version_id == "extension"})


def load_for(xml_path: str) -> None:
    """Register the extension before an IR that uses it is read; ConfigError naming the
    package when it is not installed."""
    try:
        with open(xml_path, "rb") as f:
            if b'version="extension"' not in f.read() or load():
                return
    except OSError as err:
        raise RunError(f"OpenVINO cannot read it ({err.strerror})") from err
    raise ConfigError(f"{xml_path} uses ops of OpenVINO's tokenizer extension, which run with "
                      f"{PACKAGE}, not installed; {install_hint('openvino')}")
