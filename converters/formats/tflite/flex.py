"""Flex ops (`--allow-tf-ops`: TensorFlow kernels inside a .tflite) written the same way every
run: TFLite's converter stores each one's NodeDef serialized by C++, whose attr map comes out in
a different order run to run, so one graph gave a different file each time. Each is rewritten
with its attrs in key order (protobuf's deterministic serialization: the same bytes, the same
length, so in place)."""

from __future__ import annotations


def in_key_order(data: bytes) -> bytes:
    """`data` (a .tflite flatbuffer) with every Flex op's NodeDef serialized deterministically."""
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema
    from flatbuffers import flexbuffers
    from graphfreeze.proto.tf import node_def_pb2

    model = schema.Model.GetRootAs(data, 0)
    flex = {i for i in range(model.OperatorCodesLength())
            if (model.OperatorCodes(i).CustomCode() or b"").startswith(b"Flex")}
    if not flex:
        return data
    out = bytearray(data)
    base = np.frombuffer(data, np.uint8).__array_interface__["data"][0]
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for k in range(graph.OperatorsLength()):
            op = graph.Operators(k)
            options = op.CustomOptionsAsNumpy() if op.OpcodeIndex() in flex else 0
            if isinstance(options, int) or not options.size:
                continue
            start = options.__array_interface__["data"][0] - base
            raw = options.tobytes()
            try:
                node = flexbuffers.GetRoot(raw).AsVector[1].AsStringBytes
                canonical = node_def_pb2.NodeDef.FromString(node).SerializeToString(
                    deterministic=True)
            except Exception:  # noqa: BLE001 -- not a Flex op's [name, NodeDef]: left as written
                continue
            at = raw.find(node)
            if canonical != node and len(canonical) == len(node) and at >= 0:
                out[start + at:start + at + len(node)] = canonical
    return bytes(out)
