"""op_libraries: the TF-Text ops it lists are the ones `import tensorflow_text` registers (none
of TensorFlow's own), and a graph's TF-Text ops are found in its function bodies too."""

from __future__ import annotations

import tensorflow as tf
from graphfreeze.graph import op_libraries
from tensorflow.core.framework import graph_pb2
from tensorflow.python.framework import op_def_registry


def test_the_listed_ops_are_tensorflow_texts():
    import tensorflow_text  # noqa: F401 -- registers them

    own = set(dir(tf.raw_ops))  # TensorFlow's own ops
    for op in sorted(op_libraries.TEXT_OPS):
        assert op_def_registry.get(op) is not None, op
        assert op not in own, op
    assert op_libraries.library_of("FastBertNormalize") == "tensorflow-text"
    assert op_libraries.library_of("MatMul") is None


def test_text_ops_found_in_functions_and_the_targets_that_take_them():
    graph_def = graph_pb2.GraphDef()
    graph_def.node.add(name="x", op="Placeholder")
    body = graph_def.library.function.add()
    body.signature.name = "tokenize"
    body.node_def.add(name="sp", op="SentencepieceTokenizeOp")
    graph_def.node.add(name="call", op="tokenize")
    assert op_libraries.text_ops(graph_def) == ["SentencepieceTokenizeOp"]
    assert op_libraries.runtime_needs(graph_def)[0] == {
        "op_libraries": ["tensorflow-text"], "library_ops": ["SentencepieceTokenizeOp"]}
    from graphfreeze.registry import Registry

    registry = Registry.default(plugins=False)  # each format says which it takes (text_ops.takes)
    assert op_libraries.takers("SentencepieceTokenizeOp", registry) == \
        "the android, onnx or server target"
    assert op_libraries.takers("FastBertNormalize", registry) == \
        "the android, server or tflite target"
    assert op_libraries.takers("TFText>Utf8Binarize", registry) == \
        "the android, server or tflite target"
