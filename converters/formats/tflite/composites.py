"""Graphs with composite functions (`_implements`, `graph/composites.py`) go to TFLite's converter
as TensorFlow's own converter sends them: through a SavedModel. Its prepare-composite-functions
pass finds a composite by the `tf._implements` attribute of an imported function, which its
SavedModel importer keeps and its GraphDef importer does not (`TFLiteConverter` switches to the
SavedModel path itself when a model has one, `_contains_function_with_implements_attr`). The
frozen graph, call kept, is saved as a temporary SavedModel with one signature (inputs at the
converter's shapes, outputs keyed by node), and the converted model's tensors are renamed to
the graph's node names, as the GraphDef path names them."""

from __future__ import annotations

import os
import tempfile

SIGNATURE = "serving_default"


def composite_converter(graph_def, shapes: list[tuple[str, list[int]]], outputs: list[str]):
    """A `tf.lite.TFLiteConverter` on a temporary SavedModel of `graph_def` (placeholders fixed
    to `shapes`, signature outputs keyed by the `outputs` tensors' node names). The folder lives
    as long as the converter (`conv.graphfreeze_folder`)."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import nodes_by_name, split_tensor

    graph_def = _functions_renamed(graph_def)
    by_name = nodes_by_name(graph_def)
    for node, shape in shapes:  # the converter's -1 (a dynamic dim) is None here
        by_name[node].attr["shape"].shape.CopyFrom(
            tf.TensorShape([None if d == -1 else d for d in shape]).as_proto())

    def imported():
        tf.compat.v1.import_graph_def(graph_def, name="")

    wrapped = tf.compat.v1.wrap_function(imported, [])
    graph = wrapped.graph
    serve = wrapped.prune(
        feeds=[graph.get_tensor_by_name(f"{node}:0") for node, _ in shapes],
        fetches={split_tensor(name)[0]: graph.get_tensor_by_name(name) for name in outputs})
    folder = tempfile.TemporaryDirectory(prefix="graphfreeze-composites-")
    path = os.path.join(folder.name, "saved_model")
    module = tf.Module()
    module.serve = serve
    tf.saved_model.save(module, path, signatures={SIGNATURE: serve})
    conv = tf.lite.TFLiteConverter.from_saved_model(path, signature_keys=[SIGNATURE])
    conv.graphfreeze_folder = folder
    return conv


def renamed(data: bytes, inputs: list[str]) -> bytes:
    """The converted model's input and output tensors named after the graph's nodes: inputs in
    signature order, outputs by their signature keys."""
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(data))
    if not model.signatureDefs:
        return data
    signature = model.signatureDefs[0]
    tensors = model.subgraphs[signature.subgraphIndex].tensors
    by_key = {_text(t.name): t.tensorIndex for t in signature.inputs}
    for node in inputs:
        key = node if node in by_key else next((k for k in by_key if k.endswith(node)), None)
        if key is not None:
            tensors[by_key[key]].name = node.encode()
    for item in signature.outputs:
        tensors[item.tensorIndex].name = item.name
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def _functions_renamed(graph_def):
    """A copy whose library functions are named `NAME_frozen`: the process may hold the
    model's own functions under their names (the loaded SavedModel), with other bodies."""
    graph_def = type(graph_def).FromString(graph_def.SerializeToString())
    names = {f.signature.name: f"{f.signature.name}_frozen" for f in graph_def.library.function}

    def fix(nodes):
        for node in nodes:
            if node.op in names:
                node.op = names[node.op]
            for value in node.attr.values():
                for func in [value.func, *value.list.func]:
                    if func.name in names:
                        func.name = names[func.name]

    fix(graph_def.node)
    for fdef in graph_def.library.function:
        fdef.signature.name = names[fdef.signature.name]
        fix(fdef.node_def)
    for grad in graph_def.library.gradient:
        grad.function_name = names.get(grad.function_name, grad.function_name)
    return graph_def


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
