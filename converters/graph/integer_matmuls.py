"""Integer matrix products in float, for TFLite and OpenVINO.

Keras 3's own quantization (`model.quantize("int8")`) computes each Dense and EinsumDense as an
int8 x int8 -> int32 `BatchMatMulV3` (its inputs quantized on the fly, its int8 kernel as is),
which TFLite's builtins lack (`tfl.fully_connected` takes int8 only as a quantized type) and
OpenVINO's TensorFlow frontend converts to a product that overflows (outputs off by 1e4).
`float_integer_matmuls` computes such a product in float32 on the integer values cast to float:
exact while a sum of products stays below 2**24 (inner sizes up to 1040 at int8's worst case),
and the int8 kernel's values stay integers, so the int8 targets quantize them back to the same
int8 values (scale 1).
"""

from __future__ import annotations

from graphfreeze.graph.graphdefs import GraphDef, is_control, split_tensor
from graphfreeze.proto.tf.types_pb2 import DT_FLOAT as _FLOAT
from graphfreeze.proto.tf.types_pb2 import DT_INT8, DT_INT16, DT_UINT8
from graphfreeze.proto.tf.types_pb2 import DT_INT32 as _INT32

MATMULS = ("BatchMatMulV3",)
_INTEGERS = (DT_INT8, DT_UINT8, DT_INT16)


def float_integer_matmuls(graph_def) -> GraphDef:
    """`graph_def` with each integer BatchMatMulV3 computed in float32 (its operands cast to
    float, its int32 product a Cast of the float one); `graph_def` itself when it has none."""
    found = [n.name for n in graph_def.node if n.op in MATMULS and
             n.attr["Ta"].type in _INTEGERS and n.attr["Tb"].type in _INTEGERS]
    if not found:
        return graph_def
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    nodes = {n.name: n for n in out.node}
    for name in found:
        node = nodes[name]
        node.name = f"{name}/float"
        for i in range(2):
            cast = out.node.add(name=f"{name}/float_operand_{i}", op="Cast")
            cast.input.append(node.input[i])
            cast.attr["SrcT"].type = node.attr["Ta" if i == 0 else "Tb"].type
            cast.attr["DstT"].type = _FLOAT
            if node.device:
                cast.device = node.device
            node.input[i] = cast.name
        for key in ("Ta", "Tb", "Tout"):
            node.attr[key].type = _FLOAT
        back = out.node.add(name=name, op="Cast", input=[node.name], device=node.device)
        back.attr["SrcT"].type = _FLOAT
        back.attr["DstT"].type = _INT32
        back.attr["Truncate"].b = False
        for user in out.node:  # Keras casts the int32 product back to float: read it directly
            if user.op == "Cast" and user.attr["SrcT"].type == _INT32 and \
                    user.attr["DstT"].type == _FLOAT and len(user.input) == 1 and \
                    not is_control(user.input[0]) and split_tensor(user.input[0]) == (name, 0):
                user.input[0] = node.name
                user.op = "Identity"
                user.attr.clear()
                user.attr["T"].type = _FLOAT
    return out
