"""formats/onnx/external.py: weights held apart never go through tf2onnx; they are written into
FILE.onnx.data from the arrays themselves (a real frozen CNN, its convolution kernels too)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graphfreeze.formats.onnx import export as onnx_export
from graphfreeze.formats.onnx.export import OnnxOptions
from graphfreeze.graph.skeleton import run_frozen
from graphfreeze.graph.weights import held
from graphfreeze.tensors import sample_inputs

from tests.formats.tflite.test_export import export, graph_state


@pytest.fixture(scope="module")
def cnn(samples):
    return graph_state(samples / "cnn_v2")


def test_held_weights_are_written_beside_the_model_from_their_arrays(cnn, tmp_path):
    assert cnn.weights is not None and cnn.weights.arrays
    arrays = dict(cnn.weights.arrays)
    path = tmp_path / "apart.onnx"
    with held(cnn.weights):
        done, txn = export(cnn, onnx_export.run, OnnxOptions(apart_bytes=0), path, "onnx")
    with txn:
        artifact = done.artifact
        assert artifact.facts["external_data"] == "apart.onnx.data" and done.weights is None
        feeds = sample_inputs(artifact.inputs, 3, seed=5)
        (got,) = artifact.open().run(feeds)
        txn.commit()
    (want,) = run_frozen(cnn.graph_def, feeds, ["probs:0"], cnn.weights)
    np.testing.assert_allclose(got, want, atol=1e-5)
    model = onnx.load(str(path), load_external_data=False)
    assert not {i.name for i in model.graph.input} - {t.name for t in artifact.inputs}
    data = (tmp_path / "apart.onnx.data").read_bytes()
    external = {t.name: {e.key: e.value for e in t.external_data}
                for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL}
    for array in arrays.values():  # each weight's bytes, as held, at its offset
        name = next(n for n, e in external.items()
                    if int(e["length"]) == array.nbytes and
                    data[int(e["offset"]):int(e["offset"]) + array.nbytes] == array.tobytes())
        assert int(external[name]["offset"]) % 4096 == 0
