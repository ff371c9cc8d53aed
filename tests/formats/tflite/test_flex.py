"""Flex ops' NodeDefs written in key order: one graph, one .tflite file (TFLite's converter
serializes them with C++'s map order, which changed run to run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ai_edge_litert import schema_py_generated as schema
from flatbuffers import flexbuffers
from graphfreeze.proto.tf import node_def_pb2

FREEZE = str(Path(sys.executable).with_name("freeze"))


def flex_node_defs(data: bytes) -> list[bytes]:
    model = schema.Model.GetRootAs(data, 0)
    flex = {i for i in range(model.OperatorCodesLength())
            if (model.OperatorCodes(i).CustomCode() or b"").startswith(b"Flex")}
    graph = model.Subgraphs(0)
    return [flexbuffers.GetRoot(graph.Operators(k).CustomOptionsAsNumpy().tobytes())
            .AsVector[1].AsStringBytes for k in range(graph.OperatorsLength())
            if graph.Operators(k).OpcodeIndex() in flex]


def test_a_model_with_tensorflow_ops_converts_to_the_same_bytes(zoo, tmp_path):
    """dynamic_rnn's TensorArray ops run as Flex ops: two runs, one file, every NodeDef in key
    order (six runs gave six files before)."""
    path, args = zoo("dynamic_rnn")
    written = []
    for run in ("a", "b"):
        out = tmp_path / f"{run}.tflite"
        done = subprocess.run([FREEZE, path.name, *args, "--target", "tflite", "--allow-tf-ops",
                               "--no-verify", "-o", str(out)], cwd=path.parent,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        written.append(out.read_bytes())
    assert written[0] == written[1]
    nodes = flex_node_defs(written[0])
    assert nodes and all(node == node_def_pb2.NodeDef.FromString(node).SerializeToString(
        deterministic=True) for node in nodes)
