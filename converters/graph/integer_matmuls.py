"""Integer matrix products in float, for TFLite and OpenVINO.

Keras 3's own quantization (`model.quantize("int8")`) computes each Dense and EinsumDense as an
int8 x int8 -> int32 `BatchMatMulV3` (its inputs quantized on the fly, its int8 kernel as is),
which TFLite's builtins lack (`tfl.fully_connected` takes int8 only as a quantized type) and
OpenVINO's TensorFlow frontend converts to a product that overflows (outputs off by 1e4).
`float_integer_matmuls` computes such a product in float32 on the integer values cast to float:
exact while a sum of products stays below 2**24 (inner sizes up to 1040 at int8's worst case;
beyond, float32's rounding of a sum of up to 2**31, far below the dequantized output's own
error). The kernel's values stay integers, so an int8 target holds them as Keras did where a
channel's largest |value| is 127 (its scale then 1), and within one step of them otherwise.
int16 operands (one product past 2**24) are left as they are.
"""

from __future__ import annotations

from graphfreeze.graph.graphdefs import GraphDef, copied, is_control, nodes_by_name, split_tensor
from graphfreeze.proto.tf.types_pb2 import DT_FLOAT as _FLOAT
from graphfreeze.proto.tf.types_pb2 import DT_INT8, DT_UINT8
from graphfreeze.proto.tf.types_pb2 import DT_INT32 as _INT32

MATMULS = ("BatchMatMulV3",)
_INTEGERS = (DT_INT8, DT_UINT8)


def float_integer_matmuls(graph_def) -> GraphDef:
    """`graph_def` with each integer BatchMatMulV3 computed in float32 (its operands cast to
    float, its int32 product a Cast of the float one); `graph_def` itself when it has none."""
    found = [n.name for n in graph_def.node if n.op in MATMULS and
             n.attr["Ta"].type in _INTEGERS and n.attr["Tb"].type in _INTEGERS]
    if not found:
        return graph_def
    out = copied(graph_def)
    nodes = nodes_by_name(out)
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
