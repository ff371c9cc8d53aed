"""A SavedModel folder drawn by Model Explorer's `builtin_tf_direct` adapter (its saved_model.pb
parsed, nothing run): the main graph of its first MetaGraph, a node keyed by its index there."""

from __future__ import annotations

import os

from graphfreeze.plugins import Explorer, by_index


def keys(path: str, nodes: list[str]) -> dict[str, str]:
    from google.protobuf import text_format
    from graphfreeze.io import storage
    from graphfreeze.proto.tf import saved_model_pb2

    model = saved_model_pb2.SavedModel()
    pb = storage.join(path, "saved_model.pb")
    if storage.exists(pb):
        model.ParseFromString(storage.read_bytes(pb))
    else:
        text_format.Parse(storage.read_bytes(storage.join(path, "saved_model.pbtxt")).decode(),
                          model)
    return by_index(model.meta_graphs[0].graph_def, nodes)


def recognizes(path: str) -> bool:
    return any(os.path.isfile(os.path.join(path, f)) for f in ("saved_model.pb",
                                                               "saved_model.pbtxt"))


EXPLORER = Explorer("builtin_tf_direct", "SavedModel folders", keys, recognizes)
