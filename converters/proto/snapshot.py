"""Regenerate the TensorFlow-free floor from the installed TensorFlow (after an upgrade):

    python -m graphfreeze.proto.snapshot

- `tf/*_pb2.py`: TensorFlow's own generated modules for the graph, SavedModel, checkpoint and
  tf.Example protos (protoc's output for TensorFlow's `.proto` files, as the TensorFlow wheel
  ships it), copied with their imports pointed here. Their descriptors keep TensorFlow's file and message
  names, byte for byte, so they share the default descriptor pool with TensorFlow's: once
  TensorFlow is imported too, both modules give the same message classes.
- `op_defs.pb`: TensorFlow's op registry (an OpList; what graph validation checks against),
  and `registry.json`: the graph versions this TensorFlow reads.
A test checks all three against the installed TensorFlow.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).parent
GENERATED = HERE / "tf"
OP_DEFS = HERE / "op_defs.pb"
VERSIONS = HERE / "registry.json"
# What the floor reads and writes; their imports pull in the rest (function, tensor, types, ...).
ROOTS = ("tensorflow.core.framework.graph_pb2", "tensorflow.core.protobuf.meta_graph_pb2",
         "tensorflow.core.protobuf.saved_model_pb2", "tensorflow.core.protobuf.tensor_bundle_pb2",
         "tensorflow.core.framework.op_def_pb2", "tensorflow.core.framework.variable_pb2",
         "tensorflow.core.protobuf.trackable_object_graph_pb2",
         "tensorflow.core.protobuf.saved_object_graph_pb2", "tensorflow.core.protobuf.saver_pb2",
         "tensorflow.core.util.saved_tensor_slice_pb2",
         "tensorflow.core.example.example_pb2")  # (seeded tf.Examples: data/examples.py)
_IMPORT = re.compile(r"^from (tensorflow[\w.]*) import (\w+_pb2) as (\w+)$", re.MULTILINE)


def module_sources() -> dict[str, str]:
    """TensorFlow module name -> its source, for ROOTS and every TensorFlow module they import."""
    import importlib.util

    found, todo = {}, list(ROOTS)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = Path(importlib.util.find_spec(name).origin).read_text()
        todo += [f"{package}.{module}" for package, module, _ in _IMPORT.findall(found[name])]
    return found


def local_source(source: str) -> str:
    """A TensorFlow _pb2 module's source with its TensorFlow imports pointed at this folder."""
    return "# ruff: noqa\n" + _IMPORT.sub(r"from graphfreeze.proto.tf import \2 as \3", source)


def op_list_bytes() -> bytes:
    """Every op TensorFlow registers (no custom op libraries), sorted by name, serialized."""
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as c_api

    registered = op_def_pb2.OpList.FromString(c_api.TF_GetBuffer(c_api.TF_GetAllOpList()))
    return op_def_pb2.OpList(op=sorted(registered.op, key=lambda o: o.name)).SerializeToString(
        deterministic=True)


def versions() -> dict:
    import tensorflow as tf
    from tensorflow.python.framework import versions as tf_versions

    return {"tensorflow": tf.__version__, "graph_def_version": tf_versions.GRAPH_DEF_VERSION,
            "graph_def_version_min_producer": tf_versions.GRAPH_DEF_VERSION_MIN_PRODUCER}


def regenerate() -> None:
    sources = module_sources()
    for old in GENERATED.glob("*_pb2.py"):
        old.unlink()
    for name, source in sources.items():
        (GENERATED / (name.rsplit(".", 1)[1] + ".py")).write_text(local_source(source))
    OP_DEFS.write_bytes(op_list_bytes())
    VERSIONS.write_text(json.dumps(versions(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    regenerate()
    print(f"{GENERATED}: {len(list(GENERATED.glob('*_pb2.py')))} modules; {OP_DEFS}, {VERSIONS}")
