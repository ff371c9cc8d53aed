"""Verification's original of a checkpoint: the graph with its restores added on the floor, run
through TensorFlow's C API, gives what TensorFlow's own Saver restore and session give (what
freeze_graph runs), on every kind of variable the samples have."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.convert import Request, initial_state, prepare
from graphfreeze.graph import c_session
from graphfreeze.sources.checkpoint_files import reader_path
from graphfreeze.sources.checkpoint_restore import restoring
from graphfreeze.stages import freeze_variables
from graphfreeze.stages.verify.diverge import reference_run
from graphfreeze.tensors import io_infos, sample_inputs


def _reference(model_dir, tmp_path):
    """(model, reference graph, feeds with the flags, output names) of a sample checkpoint."""
    prepared = prepare(Request(str(model_dir / "model.ckpt-200"), outputs=("probs",),
                               targets=("android",), output=str(tmp_path / "out.pb")))
    model = prepared.source.load(prepared.request.source, prepared.source_options, False)
    state = freeze_variables.run(initial_state(prepared.request, model), None)
    graph_def, flag_feeds = reference_run(state)
    feeds = sample_inputs(io_infos(state)[0], 5, 0)
    return model, graph_def, {**feeds, **flag_feeds}, [t.name for t in state.outputs]


def _saver_run(prefix: str, feeds: dict, names: list[str]) -> list:
    """The whole meta graph, restored by its own Saver, run as freeze_graph runs it."""
    import tensorflow as tf
    from graphfreeze.graph.session import lean_config

    graph = tf.Graph()
    with graph.as_default():
        saver = tf.compat.v1.train.import_meta_graph(prefix + ".meta", clear_devices=True)
    with tf.compat.v1.Session(graph=graph, config=lean_config()) as sess:
        saver.restore(sess, prefix)
        return sess.run(names, feeds)


def _python_restore_run(model, graph_def, feeds: dict, names: list[str]) -> list:
    """The reference graph restored by tf.raw_ops in a Python session (the run before the C
    API's)."""
    import tensorflow as tf
    from graphfreeze.graph.ops import VARIABLE_OPS
    from graphfreeze.graph.session import import_graph, lean_config

    graph = import_graph(graph_def)
    with graph.as_default():
        nodes = [n for n in graph_def.node if n.op in VARIABLE_OPS]
        specs = [model.variables[n.name] for n in nodes]
        values = tf.raw_ops.RestoreV2(prefix=reader_path(model.prefix),
                                      tensor_names=[s.key for s in specs],
                                      shape_and_slices=[s.slice for s in specs],
                                      dtypes=[s.dtype for s in specs])
        restores = [
            tf.raw_ops.AssignVariableOp(resource=graph.get_tensor_by_name(n.name + ":0"),
                                        value=v) if n.op == "VarHandleOp" else
            tf.raw_ops.Assign(ref=graph.get_tensor_by_name(n.name + ":0"), value=v)
            for n, v in zip(nodes, values, strict=True)]
    with tf.compat.v1.Session(graph=graph, config=lean_config()) as sess:
        sess.run(restores)
        return sess.run(names, feeds)


@pytest.mark.parametrize(("name", "saver"), [
    ("iris", True), ("iris_partitioned", True), ("cnn_v1", True), ("cnn_v2", True),
    ("iris_resource", False)])  # (its dropout is baked in: the whole graph's run is random)
def test_the_c_api_run_is_the_savers(samples, tmp_path, name, saver):
    model, graph_def, feeds, names = _reference(samples / name, tmp_path)
    graph, assigns = restoring(graph_def, model.variables, reader_path(model.prefix))
    assert assigns and len(graph.node) == len(graph_def.node) + 4 + len(assigns)
    got = c_session.run(graph, feeds, names, (assigns,))  # raises where the C API cannot
    for g, w in zip(got, _python_restore_run(model, graph_def, feeds, names), strict=True):
        np.testing.assert_array_equal(g, w)
    if saver:
        for g, w in zip(got, _saver_run(model.prefix, feeds, names), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
    # and the source's own reference run is that run
    for g, r in zip(got, model.run_reference(graph_def, feeds, names), strict=True):
        np.testing.assert_array_equal(g, r)


def test_the_restore_scope_is_a_free_name(samples, tmp_path):
    model, graph_def, _, _ = _reference(samples / "iris", tmp_path)
    graph_def.node.add(name="graphfreeze_restore", op="NoOp")
    graph, assigns = restoring(graph_def, model.variables, "prefix")
    assert all(a.startswith("graphfreeze_restore_1/") for a in assigns)
    assert len({n.name for n in graph.node}) == len(graph.node)


def test_a_graph_without_variables_is_left_as_it_is():
    from graphfreeze.proto.tf import graph_pb2

    graph_def = graph_pb2.GraphDef()
    graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    assert restoring(graph_def, {}, "prefix") == (graph_def, ())
