"""TF-Text ops before TFLite's converter: those with a TF-Text TFLite kernel are let through as
custom ops, any other is one line naming the node, the op and what takes it."""

from __future__ import annotations

import pytest
from graphfreeze.errors import InputError
from graphfreeze.formats.tflite import text_ops
from tensorflow.core.framework import graph_pb2


def converter():
    """A real TFLiteConverter (prepare sets its allow_custom_ops and registerers)."""
    import tensorflow as tf

    return tf.compat.v1.lite.TFLiteConverter(graph_pb2.GraphDef(), None, None,
                                             input_arrays_with_shape=[("x", [1])],
                                             output_arrays=["y"])


def graph(*ops: str):
    graph_def = graph_pb2.GraphDef()
    for k, op in enumerate(ops):
        graph_def.node.add(name=f"n{k}", op=op)
    return graph_def


def test_kernels_go_in_as_custom_ops():
    conv = converter()
    text_ops.prepare(conv, graph("Placeholder", "FastBertNormalize",
                                 "TFText>WhitespaceTokenizeWithOffsetsV2"), "m.pb")
    assert conv.allow_custom_ops and conv.target_spec._experimental_custom_op_registerers
    plain = converter()
    text_ops.prepare(plain, graph("Placeholder", "MatMul"), "m.pb")
    assert not plain.allow_custom_ops


@pytest.mark.parametrize("op,phrases", [
    ("WordpieceTokenizeWithOffsets", ("FastWordpieceTokenizer", "android, onnx or server")),
    ("UnicodeScriptTokenizeWithOffsets", ("android or server target", "Flex delegate")),
])
def test_a_text_op_without_kernel_is_one_line(op, phrases):
    from graphfreeze.registry import Registry

    with pytest.raises(InputError) as caught:
        text_ops.prepare(converter(), graph("Placeholder", op), "m.pb")
    line = str(caught.value.named(Registry.default(plugins=False)))  # as the run names them
    assert line.startswith("m.pb: node 'n1'") and f"TF-Text op '{op}'" in line, line
    assert "\n" not in line and all(p in line for p in phrases), line
