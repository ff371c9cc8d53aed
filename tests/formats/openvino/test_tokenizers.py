"""openvino-tokenizers: loaded for a graph with strings and for an IR that uses its ops; an IR
that needs it without it installed is one line naming the package."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from graphfreeze.errors import ConfigError
from graphfreeze.formats.openvino import tokenizers
from graphfreeze.graph.consts import make_const
from tensorflow.core.framework import graph_pb2


def test_a_graph_has_strings_when_a_node_or_function_body_types_one():
    graph_def = graph_pb2.GraphDef()
    graph_def.node.append(make_const("x", np.zeros(2, np.float32)))
    assert not tokenizers.has_strings(graph_def)
    body = graph_def.library.function.add()
    body.node_def.append(make_const("words", np.array([b"red"], dtype=object)))
    assert tokenizers.has_strings(graph_def)


def test_an_ir_of_extension_ops_needs_the_package(tmp_path, monkeypatch):
    plain, extended = tmp_path / "plain.xml", tmp_path / "extended.xml"
    plain.write_text('<net><layers><layer type="Parameter" version="opset1"/></layers></net>')
    extended.write_text('<net><layers><layer type="VocabEncoder" version="extension"/></layers>'
                        '</net>')
    monkeypatch.setitem(sys.modules, "openvino_tokenizers", None)  # as if not installed
    tokenizers.load_for(str(plain))
    with pytest.raises(ConfigError) as caught:
        tokenizers.load_for(str(extended))
    assert str(caught.value) == (f"{extended} uses ops of OpenVINO's tokenizer extension, which run "
                                 "with openvino-tokenizers, not installed; pip install "
                                 "'graphfreeze[openvino]'")
    assert "pip install 'graphfreeze[openvino]'" in tokenizers.hint()
