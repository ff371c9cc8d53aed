"""A frozen graph with a function library (a functional While) reaches OpenVINO's frontend as a
`.pb` it reads whole: given as a GraphDef, its Python iterator cannot reach the bodies."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("openvino")


def test_a_while_loop_converts_and_runs():
    import openvino as ov
    import tensorflow as tf
    from graphfreeze.formats.openvino.convert import convert
    from graphfreeze.graph.session import run_graph_def
    from graphfreeze.sources.functions import freeze_function

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def loop(x):
        _, y = tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, tf.tanh(h * 1.5 + 0.1)),
                             [tf.constant(0), x])
        return {"y": y}

    graph_def = freeze_function(loop.get_concrete_function(), ["x"], ["y"])
    assert any(n.op in ("While", "StatelessWhile") for n in graph_def.node)
    model = convert(graph_def, [("x:0", [None, 4])], ["y:0"])
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    got = ov.Core().compile_model(model, "CPU")({"x:0": x})
    np.testing.assert_allclose(next(iter(got.values())),
                               run_graph_def(graph_def, {"x:0": x}, ["y:0"])[0], atol=1e-5)
