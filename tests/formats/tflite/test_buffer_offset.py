"""formats/tflite/buffer_offset.py: weights held apart never go through TFLiteConverter; they are
written after the flatbuffer from the arrays themselves (LiteRT's buffer-offset layout), and
LiteRT's interpreter runs the file as the frozen graph runs."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.formats.tflite import export as tflite
from graphfreeze.formats.tflite.buffer_offset import LOCATION
from graphfreeze.formats.tflite.export import TFLiteOptions
from graphfreeze.graph.skeleton import run_frozen
from graphfreeze.graph.weights import held
from graphfreeze.tensors import sample_inputs

from tests.formats.tflite.test_export import export, graph_state


@pytest.mark.parametrize("name", ["cnn_v2"])
def test_held_weights_follow_the_flatbuffer(samples, tmp_path, name):
    state = graph_state(samples / name)
    assert state.weights is not None and state.weights.arrays
    arrays = [a.tobytes() for a in state.weights.arrays.values()]
    path = tmp_path / f"{name}.tflite"
    with held(state.weights):
        done, txn = export(state, tflite.run, TFLiteOptions(apart_bytes=0), path, "tflite")
    with txn:
        artifact = done.artifact
        assert artifact.facts["buffer_offset"] and done.weights is None
        assert [i.name for i in artifact.inputs] == [t.name for t in state.inputs]
        feeds = sample_inputs(artifact.inputs, 3, seed=5)
        (got,) = artifact.open().run(feeds)
        txn.commit()
    (want,) = run_frozen(state.graph_def, feeds, ["probs:0"], state.weights)
    np.testing.assert_allclose(got, want, atol=1e-5)
    data = path.read_bytes()
    assert LOCATION in data[:4096]
    for value in arrays:  # each weight's bytes, as held, after the flatbuffer
        assert data.find(value) > 0
