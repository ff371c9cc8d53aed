"""tf2onnx's missing handler for XlaDynamicUpdateSlice (how Keras' `ops.slice_update` writes
keras-hub's KV cache): ONNX has no such op, so the update's elements are scattered (ScatterND)
at the start indices plus each element's own index, built per axis from Range and Expand."""

from __future__ import annotations

_REGISTERED = []


def register() -> None:
    """Add the handler to tf2onnx's op table (once)."""
    if _REGISTERED:
        return
    import numpy as np
    from onnx import TensorProto
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    def const(ctx, value):
        return ctx.make_const(utils.make_name("dus"), np.array(value, np.int64)).output[0]

    @tf_op("XlaDynamicUpdateSlice", onnx_op="ScatterND")
    class XlaDynamicUpdateSlice:
        @classmethod
        def version_13(cls, ctx, node, **kwargs):
            operand, update, starts = node.input
            rank = len(ctx.get_shape(update))
            shape = ctx.make_node("Shape", [update]).output[0]
            starts = ctx.make_node("Cast", [starts], attr={"to": TensorProto.INT64}).output[0]
            zero, one, last = const(ctx, 0), const(ctx, 1), const(ctx, [-1])
            columns = []
            for axis in range(rank):
                at = const(ctx, axis)
                size = ctx.make_node("Gather", [shape, at]).output[0]
                index = ctx.make_node("Range", [zero, size, one]).output[0]
                index = ctx.make_node("Add", [index, ctx.make_node("Gather", [starts, at])
                                              .output[0]]).output[0]
                view = const(ctx, [-1 if i == axis else 1 for i in range(rank)])
                index = ctx.make_node("Reshape", [index, view]).output[0]
                index = ctx.make_node("Expand", [index, shape]).output[0]
                columns.append(ctx.make_node("Unsqueeze", [index, last]).output[0])
            indices = ctx.make_node("Concat", columns, attr={"axis": -1}).output[0]
            ctx.replace_inputs(node, [operand, indices, update])

    _REGISTERED.append(XlaDynamicUpdateSlice)
