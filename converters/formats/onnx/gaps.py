"""Which ops ONNX takes: the opset graphfreeze writes (the newest tf2onnx writes that the
installed onnxruntime loads) and the TensorFlow ops tf2onnx has a handler for at it."""

from __future__ import annotations

import functools

from graphfreeze.errors import ConfigError
from graphfreeze.plugins import OpGaps

MIN_OPSET = 9


@functools.cache
def newest_opset() -> int:
    """The newest opset tf2onnx writes that the installed onnxruntime also loads."""
    import onnx
    import onnxruntime as ort
    from tf2onnx import constants

    for opset in sorted(constants.OPSET_TO_IR_VERSION, reverse=True):
        x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
        y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
        graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["x"], ["y"])],
                                       "probe", [x], [y])
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                       ir_version=constants.OPSET_TO_IR_VERSION[opset])
        try:
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            return opset
        except Exception:  # noqa: BLE001 -- this runtime does not take that opset; try older
            continue
    raise ConfigError("onnxruntime loads none of the opsets tf2onnx writes; reinstall graphfreeze")


def onnx_gaps(graph_def, ops: set[str]) -> OpGaps:
    """Ops tf2onnx has no handler for at the opset graphfreeze would use (ops the onnx target
    rewrites first, and fake quantization, which graphfreeze maps itself, count as handled)."""
    import tf2onnx.tfonnx  # noqa: F401 -- importing it registers every op handler
    from graphfreeze.formats.onnx.fakequant import FAKE_QUANT_OPS
    from graphfreeze.graph.passes.op_rewrites import ONNX_REWRITES
    from tf2onnx import handler

    opset = newest_opset()
    known = set(ONNX_REWRITES) | set(FAKE_QUANT_OPS)
    for domain_ops in handler.tf_op.get_opsets().values():
        for version, handlers in enumerate(domain_ops):
            if version <= opset:
                known |= set(handlers)
    missing = sorted(o for o in ops if o not in known)
    return OpGaps("onnx", missing, f"onnx (opset {opset}): " + (", ".join(missing) or
                                                              "all ops convert"),
                  {"opset": opset})
