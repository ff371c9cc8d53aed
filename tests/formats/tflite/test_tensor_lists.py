"""static_element_shapes: a Keras 3 LSTM's TensorLists (declared [-1, units]) get the element
shape they hold at batch 1, and TFLite then converts the model to builtins, matching Keras."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.formats.tflite.tensor_lists import static_element_shapes


@pytest.fixture(scope="module")
def lstm(tmp_path_factory):
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    tokens = keras.Input((9,), dtype="int32", name="tokens")
    x = layers.Embedding(30, 8, mask_zero=True)(tokens)
    x = layers.LSTM(8, return_sequences=True)(x)
    model = keras.Model(tokens, layers.Dense(2, name="probs")(layers.GRU(4)(x)))
    path = tmp_path_factory.mktemp("lists") / "m.keras"
    model.save(path)
    from graphfreeze.sources.keras_model import load

    return load(str(path))


def _convert(graph_def):
    converter = tf.compat.v1.lite.TFLiteConverter(
        graph_def, None, None, input_arrays_with_shape=[("tokens", [1, 9])],
        output_arrays=["probs"])
    return converter.convert()


def test_open_lists_become_static_and_tflite_matches(lstm):
    with pytest.raises(Exception, match="TensorListReserve"):
        _convert(lstm.graph_def)
    graph_def = static_element_shapes(lstm.graph_def, {"tokens": [1, 9]})
    assert graph_def is not lstm.graph_def
    assert sum(n.name.endswith("/static_element_shape") for n in graph_def.node) >= 2
    interpreter = tf.lite.Interpreter(model_content=_convert(graph_def))
    interpreter.allocate_tensors()
    tokens = np.array([[3, 7, 1, 9, 0, 0, 0, 0, 0]], np.int32)  # masked tail
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], tokens)
    interpreter.invoke()
    got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    want = lstm.run_reference(lstm.graph_def, {"tokens:0": tokens}, ["probs:0"])[0]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_graph_without_open_lists_is_returned_as_is(lstm):
    once = static_element_shapes(lstm.graph_def, {"tokens": [1, 9]})
    assert static_element_shapes(once, {"tokens": [1, 9]}) is once
    assert static_element_shapes(lstm.graph_def, {"tokens": [None, 9]}) is lstm.graph_def
