"""TensorFlow's op registry without TensorFlow: the OpDefs and graph versions of the
TensorFlow graphfreeze pins, snapshotted by `graphfreeze.proto.snapshot` (op_defs.pb,
registry.json). An op the snapshot lacks (a custom op library's) is asked of TensorFlow's live
registry, importing TensorFlow then; once TensorFlow is imported, its registry answers."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


@functools.cache
def _snapshot() -> dict:
    from graphfreeze.proto.tf import op_def_pb2

    ops = op_def_pb2.OpList.FromString((HERE / "op_defs.pb").read_bytes())
    return {op.name: op for op in ops.op}


@functools.cache
def versions() -> dict:
    """{"tensorflow": "2.21.0", "graph_def_version": ..., "graph_def_version_min_producer": ...}"""
    return json.loads((HERE / "registry.json").read_text())


def op_def(op: str):
    """The OpDef of op type `op`, or None if neither the snapshot nor TensorFlow defines it."""
    if "tensorflow" not in sys.modules:
        found = _snapshot().get(op)
        if found is not None:
            return found
    from tensorflow.python.framework import op_def_registry

    return op_def_registry.get(op)
