"""TF-Text and string ops before tf2onnx: those it maps to onnxruntime-extensions ops ask for
the ai.onnx.contrib opset; any other TF-Text op, and a string op whose extensions kernel
computes something else, is one line naming the node, the op and what takes it."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.errors import InputError
from graphfreeze.formats.onnx.text_ops import extra_opsets
from graphfreeze.registry import Registry
from tensorflow.core.framework import graph_pb2


def graph(*ops: str):
    graph_def = graph_pb2.GraphDef()
    for k, op in enumerate(ops):
        graph_def.node.add(name=f"n{k}", op=op)
    return graph_def


def test_mapped_ops_ask_for_the_contrib_opset():
    (opset,) = extra_opsets(graph("SentencepieceOp", "SentencepieceTokenizeOp"), "m.pb")
    assert (opset.domain, opset.version) == ("ai.onnx.contrib", 1)
    assert extra_opsets(graph("Placeholder", "MatMul"), "m.pb") == []


def test_an_unmapped_text_op_is_one_line():
    with pytest.raises(InputError) as caught:
        extra_opsets(graph("Placeholder", "FastBertNormalize"), "m.pb")
    line = str(caught.value.named(Registry.default(plugins=False)))  # as the run names them
    assert line == ("m.pb: node 'n1' has TF-Text op 'FastBertNormalize', which tf2onnx maps to "
                    "no ONNX or onnxruntime-extensions op; use the android, server or tflite "
                    "target"), line


def split_graph(sep: bytes, maxsplit: int = -1):
    from graphfreeze.graph.consts import make_const

    graph_def = graph("Placeholder")
    graph_def.node.append(make_const("sep", np.array(sep, dtype=object)))
    split = graph_def.node.add(name="split", op="StringSplitV2", input=["n0", "sep"])
    split.attr["maxsplit"].i = maxsplit
    return graph_def


def test_string_ops_tf2onnx_maps_to_the_extensions_ask_for_the_contrib_opset():
    (opset,) = extra_opsets(graph("Placeholder", "StaticRegexReplace"), "m.pb")
    assert (opset.domain, opset.version) == ("ai.onnx.contrib", 1)
    (opset,) = extra_opsets(split_graph(b" "), "m.pb")
    assert opset.domain == "ai.onnx.contrib"


@pytest.mark.parametrize("graph_def,node,op,why", [
    (split_graph(b""), "split", "StringSplitV2", "splits on whitespace, StringSplit into "
                                                 "characters"),
    (split_graph(b", "), "split", "StringSplitV2", "the whole separator b', ', StringSplit on "
                                                   "each of its bytes"),
    (split_graph(b" ", maxsplit=1), "split", "StringSplitV2", "no maxsplit (this one's is 1)"),
    (graph("Placeholder", "StringToHashBucketFast"), "n1", "StringToHashBucketFast",
     "other buckets"),
])
def test_a_string_op_the_extensions_compute_otherwise_is_one_line(graph_def, node, op, why):
    with pytest.raises(InputError) as caught:
        extra_opsets(graph_def, "m.pb")
    line = str(caught.value)
    assert line.startswith(f"m.pb: node '{node}' ({op}): onnxruntime-extensions' kernel") and \
        why in line and line.endswith("use the android, server or openvino target"), line
