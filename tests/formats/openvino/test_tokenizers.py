"""openvino-tokenizers: loaded for a graph with strings and for an IR that uses its ops; an IR
that needs it without it installed is one line naming the package."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from graphfreeze.errors import ConfigError, RunError, install_hint
from graphfreeze.formats.openvino import tokenizers
from graphfreeze.graph.consts import make_const
from tensorflow.core.framework import graph_pb2


def test_the_extension_is_needed_for_strings_in_a_node_or_body_and_for_ragged_ops():
    graph_def = graph_pb2.GraphDef()
    graph_def.node.append(make_const("x", np.zeros(2, np.float32)))
    assert not tokenizers.needed(graph_def)
    body = graph_def.library.function.add()
    body.node_def.append(make_const("words", np.array([b"red"], dtype=object)))
    assert tokenizers.needed(graph_def)
    numeric = graph_pb2.GraphDef()
    numeric.node.add(name="dense", op="RaggedTensorToTensor")  # numbers: the extension's rule
    assert tokenizers.needed(numeric)


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
                                 f"with openvino-tokenizers, not installed; {install_hint('openvino')}")
    assert install_hint("openvino") in tokenizers.hint()
    with pytest.raises(RunError, match="OpenVINO cannot read it"):
        tokenizers.load_for(str(tmp_path / "gone.xml"))


def test_strings_reach_openvino_as_bytes_and_come_back_as_they_were(tmp_path):
    """A string round-trip IR: bytes that are not UTF-8, str, and a 2-D batch come back as the
    bytes TensorFlow would give (OpenVINO's own results decode them as UTF-8)."""
    import openvino as ov
    from graphfreeze.formats.openvino.runtime import open_openvino
    from graphfreeze.tensors import TensorInfo

    param = ov.opset15.parameter([-1, -1], ov.Type.string, name="text")
    param.output(0).set_names({"text:0"})
    result = ov.opset15.result(ov.opset15.string_tensor_pack(
        *ov.opset15.string_tensor_unpack(param).outputs()))  # a round trip through its bytes
    result.output(0).set_names({"same:0"})
    ov.save_model(ov.Model([result], [param]), str(tmp_path / "m.xml"))
    session = open_openvino(str(tmp_path / "m.xml"), [TensorInfo("text:0", "string", (None, None))],
                            [TensorInfo("same:0", "string", (None, None))])
    words = np.array([[b"\xff\xfeq", b"red"], ["gr\u00fcn", b""]], dtype=object)
    (got,) = session.run({"text:0": words})
    assert got.dtype == object and got.tolist() == [[b"\xff\xfeq", b"red"],
                                                    ["gr\u00fcn".encode(), b""]]


def test_an_openvino_error_is_its_node_and_what_went_wrong():
    from graphfreeze.formats.openvino.runtime import reason

    err = RuntimeError("Exception from src/inference/src/cpp/core.cpp:132:\n"
                       "Check 'element::Type::merge(a, b)' failed at src/core/src/op/select.cpp:68:\n"
                       "While validating node 'opset1::Select S (...)' with friendly_name 'emb/Sel':\n"
                       "Argument 1 and 2 element types must match.\n\n")
    assert reason(err) == "node 'emb/Sel': Argument 1 and 2 element types must match."
    plugin = RuntimeError("Exception from src/plugins/intel_cpu/infer_request.cpp:224:\n"
                          "[CPU] Reshape node with name 'Reshape_14' has incorrect input shape")
    assert reason(plugin) == "[CPU] Reshape node with name 'Reshape_14' has incorrect input shape"
