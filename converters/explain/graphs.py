"""The graph Model Explorer shows for an artifact, and the keys its node data matches there.

Model Explorer's built-in adapters (ai-edge-model-explorer, `ai_edge_model_explorer_adapter`)
read three of graphfreeze's formats by parsing the file, running nothing: a `.tflite` flatbuffer
(`builtin_tflite_flatbuffer`), a frozen GraphDef (`builtin_graphdef`) and a SavedModel's
`saved_model.pb` (`builtin_tf_direct`). A node-data result is matched by the node's id or by one
of its output tensor names (Model Explorer's node_data_builder.GraphNodeData): TFLite nodes
carry their output tensors' names, so a TFLite overlay is keyed by tensor name (`a;b;c` for an
op TFLite fused from nodes a, b and c); GraphDef nodes carry none, and their id is the node's
index in the GraphDef (the main graph of the SavedModel's first MetaGraph).
"""

from __future__ import annotations

ADAPTERS = {"tflite": "builtin_tflite_flatbuffer", "frozen_graph": "builtin_graphdef",
            "saved_model": "builtin_tf_direct"}
READS = ".tflite files, frozen GraphDefs (.pb) and SavedModel folders"


def node_keys(artifact, nodes: list[str]) -> dict[str, str]:
    """{TensorFlow node: its key in Model Explorer's graph of `artifact`} for `nodes` (in graph
    order) that the artifact has; {} for a format Model Explorer does not read."""
    fmt = artifact.format.name
    where = artifact.staged or artifact.path
    if fmt == "tflite":
        return _tflite_keys(where, nodes)
    if fmt == "frozen_graph":
        graph_def = _graph_def(where)  # as written (the export may order it anew)
    elif fmt == "saved_model":
        graph_def = _saved_model_graph(where)
    else:
        return {}
    wanted = set(nodes)
    return {n.name: str(i) for i, n in enumerate(graph_def.node) if n.name in wanted}


def tflite_tensors(path: str) -> list[str]:
    """The names of the tensors the ops of a .tflite's first subgraph make, in op order."""
    from ai_edge_litert import schema_py_generated as schema
    from graphfreeze.io import storage

    graph = schema.Model.GetRootAs(storage.read_bytes(path), 0).Subgraphs(0)
    names = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        for k in range(op.OutputsLength()):
            index = op.Outputs(k)
            if index >= 0:
                names.append(graph.Tensors(index).Name().decode("utf-8", "replace"))
    return names


def _tflite_keys(path: str, nodes: list[str]) -> dict[str, str]:
    """A tensor `a;b;c` stands for the last of a, b, c in graph order (as the TFLite runtime's
    `tensors` names it for the divergence locator)."""
    position = {name: i for i, name in enumerate(nodes)}
    keys = {}
    for tensor in tflite_tensors(path):
        parts = [p for p in tensor.split(";") if p in position]
        if parts:
            keys.setdefault(max(parts, key=position.get), tensor)
    return keys


def _graph_def(path: str):
    from graphfreeze.io import storage
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(storage.read_bytes(path))
    return graph_def


def _saved_model_graph(path: str):
    from google.protobuf import text_format
    from graphfreeze.io import storage
    from tensorflow.core.protobuf import saved_model_pb2

    model = saved_model_pb2.SavedModel()
    pb = storage.join(path, "saved_model.pb")
    if storage.exists(pb):
        model.ParseFromString(storage.read_bytes(pb))
    else:
        text_format.Parse(storage.read_bytes(storage.join(path, "saved_model.pbtxt")).decode(),
                          model)
    return model.meta_graphs[0].graph_def
