"""TF-Text resources frozen into the graph. A TF2 function reads a SentencePiece model through a
captured resource handle, which TensorFlow's freezing leaves as a placeholder nobody can feed;
the op that made it (`SentencepieceOp`, the model's bytes in its `model` attr) has no inputs, so
`freeze_text_resources` puts a copy of it in the placeholder's place, as a TF1 graph has it
(and as tf2onnx and TFLite's converter expect to find it)."""

from __future__ import annotations

from graphfreeze.errors import InputError
from graphfreeze.graph.tables import creator_nodes, resources_by_handle

CREATOR_OPS = ("SentencepieceOp",)  # TF-Text resource ops with no inputs, state in attrs
_RESOURCE_NAMES = {"SentencepieceOp": "sentencepiece_model"}  # the node's name in the graph


def _creator_node(resource):
    """The creator op's NodeDef of a loaded resource, or None."""
    return next((n for n in creator_nodes(resource) if n.op in CREATOR_OPS), None)


def freeze_text_resources(graph_def, func, owner=None, where: str = "the model"):
    """`graph_def` (frozen from `func`) with each captured TF-Text resource placeholder read by a
    TF-Text op replaced by the op that creates the resource; `owner` holds the resources."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import consumers, free_name, nodes_by_name
    from graphfreeze.graph.op_libraries import TEXT_OPS
    from graphfreeze.graph.ops import IDENTITY_OPS
    from graphfreeze.graph.renames import rename_nodes

    handles = {internal.op.name: external for external, internal in func.graph.captures
               if external.dtype == tf.resource}
    by_name = nodes_by_name(graph_def)
    users = consumers(graph_def)

    def readers(name: str) -> list:  # the TF-Text ops reading `name`, through Identity nodes
        found = []
        for user in users.get(name, ()):
            node = by_name[user]
            found += readers(user) if node.op in IDENTITY_OPS else \
                [node] if node.op in TEXT_OPS else []
        return found

    wanted = {name: readers(name) for name, node in by_name.items()
              if name in handles and node.op == "Placeholder"}
    wanted = {name: found[0] for name, found in wanted.items() if found}
    if not wanted:
        return graph_def
    owners = resources_by_handle(owner)
    taken, renames = set(by_name), {}
    for name, reader in sorted(wanted.items()):
        creator = _creator_node(owners.get(id(handles[name])))
        if creator is None:
            raise InputError(f"{where}: node '{reader.name}' ({reader.op}) reads a TF-Text "
                             "resource whose creating op graphfreeze cannot find in the "
                             "SavedModel; re-export the model with the tokenizer tracked by "
                             "the exported object")
        node = by_name[name]
        node.op = creator.op
        node.ClearField("attr")
        for key, value in creator.attr.items():
            node.attr[key].CopyFrom(value)
        renames[name] = free_name(_RESOURCE_NAMES.get(creator.op, "text_resource"), taken)
        node.attr["shared_name"].s = renames[name].encode()  # one resource per node
        node.attr["container"].s = b""
    return rename_nodes(graph_def, renames)[0]
