"""Structurally valid but broken graphs through the `freeze` CLI: exit 3, one line naming the file
and the node, nothing written; recursive function libraries are refused before TensorFlow (which
crashes on them) sees the graph."""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys

import pytest
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("broken_graphs", ROOT / "models" / "broken_graphs.py")
broken_graphs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(broken_graphs)


def assert_refused(result, folder, *phrases: str) -> str:
    assert result.exit_code == 3, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    assert not [p for p in folder.iterdir() if p.name.startswith("out")], "nothing written"
    return lines[0]


@pytest.mark.parametrize("name", sorted(broken_graphs.BREAKS))
def test_broken_frozen_graph(other, freeze, tmp_path, name):
    _, node, phrase = broken_graphs.BREAKS[name]
    frozen = graph_pb2.GraphDef()
    frozen.ParseFromString(other("frozen.pb").read_bytes())
    model = tmp_path / "model.pb"
    model.write_bytes(broken_graphs.broken(frozen, name).SerializeToString())
    result = freeze("--graph", model, "--outputs", "probs", "-o", tmp_path / "out.pb")
    assert_refused(result, tmp_path, "model.pb", phrase, f"'{node}'" if node else "")


@pytest.mark.parametrize("name", ["const_splat", "calls_itself"])
def test_a_break_the_outputs_do_not_need(other, tmp_path, name):
    """A conversion validates what its outputs need: a break elsewhere in the file (a splat
    Const, a recursive function nothing calls) is dropped with the rest, and the artifact is
    verified; `freeze scan` of the file still names it."""
    frozen = graph_pb2.GraphDef()
    frozen.ParseFromString(other("frozen.pb").read_bytes())
    graph_def = broken_graphs.broken(frozen, name)
    probs = next(n for n in graph_def.node if n.name == "probs")
    probs.input[:] = [i for i in probs.input if not i.startswith("^")]  # not needed
    (tmp_path / "model.pb").write_bytes(graph_def.SerializeToString())
    run = functools.partial(subprocess.run, cwd=tmp_path, capture_output=True, text=True)
    done = run([sys.executable, "-m", "graphfreeze_cli.main", "model.pb", "--outputs", "probs",
                "-o", "out.pb"])
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out.pb.json").read_text())["verification"]["passed"]
    scanned = run([sys.executable, "-m", "graphfreeze_cli.main", "scan", "model.pb"])
    assert scanned.returncode != 0 and broken_graphs.BREAKS[name][2] in scanned.stdout, scanned


def _layer_graph(break_at: str):
    """x -> dense/MatMul -> dense/Relu -> probs, with `break_at` ('dense/Relu' or the tables'
    initializer) waiting for a 16 TiB Fill."""
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        relu = tf.nn.relu(tf.matmul(x, tf.ones([4, 3]), name="dense/MatMul"), name="dense/Relu")
        tf.nn.softmax(relu, name="probs")
    graph_def = graph.as_graph_def()
    broken_graphs.BREAKS["huge_fill"][0](graph_def)  # (probs waits for it: moved below)
    probs = next(n for n in graph_def.node if n.name == "probs")
    del probs.input[-1]
    if break_at == "init_all_tables":
        graph_def.node.add(name="init_all_tables", op="NoOp", input=["^huge"])
    else:
        next(n for n in graph_def.node if n.name == break_at).input.append("^huge")
    return graph_def


@pytest.mark.parametrize("break_at,outputs", [("dense/Relu", "dense"),
                                               ("init_all_tables", "probs")])
def test_what_a_layer_name_or_the_tables_initializer_needs_is_checked(tmp_path, break_at,
                                                                        outputs):
    """The part validated is what the resolved outputs (a Keras-style layer name: the whole
    graph) and the tables' initializer need, not only the names as typed."""
    (tmp_path / "model.pb").write_bytes(_layer_graph(break_at).SerializeToString())
    done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "model.pb",
                           "--outputs", outputs, "-o", "out.pb"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert "'huge'" in done.stderr and "[1099511627776, 4]" in done.stderr, done.stderr
    assert not (tmp_path / "out.pb").exists()


def test_constants_that_fail_as_they_run(other, freeze, tmp_path):
    """An integer divided by zero, made of constants: constant folding leaves it (it was an
    internal error there), and the reference run names the node."""
    frozen = graph_pb2.GraphDef()
    frozen.ParseFromString(other("frozen.pb").read_bytes())
    broken_graphs.divide_by_zero(frozen)
    model = tmp_path / "model.pb"
    model.write_bytes(frozen.SerializeToString())
    result = freeze("--graph", model, "--outputs", "probs", "-o", tmp_path / "out.pb")
    assert_refused(result, tmp_path, "model.pb", "'zero_div'", "Integer division by zero",
                   "--no-verify")


@pytest.mark.parametrize("name,node,phrase", [
    ("cycle", "probs", "depends on itself"),
    ("calls_itself", "", "calls itself"),
])
def test_broken_checkpoint_meta_graph(sample, freeze, name, node, phrase):
    model_dir = sample("iris")
    meta_file = model_dir / "model.ckpt-200.meta"
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString(meta_file.read_bytes())
    graph_def = meta.graph_def
    if name == "cycle":
        next(n for n in graph_def.node if n.name == "dnn/MatMul_1").input[0] = "probs"
    else:
        broken_graphs.BREAKS[name][0](graph_def)
    meta_file.write_bytes(meta.SerializeToString())
    result = freeze("--ckpt", model_dir / "model.ckpt-200", "--outputs", "probs",
                    "-o", model_dir / "out.pb")
    assert_refused(result, model_dir, "model.ckpt-200.meta", phrase, f"'{node}'" if node else "")


def test_recursive_function_in_a_saved_model(other, freeze, tmp_path):
    """tf.saved_model.load would crash the process on this: refused from the protobuf."""
    path = other("tf2_savedmodel")
    model = saved_model_pb2.SavedModel()
    model.ParseFromString((path / "saved_model.pb").read_bytes())
    library = model.meta_graphs[0].graph_def.library
    func = next(f for f in library.function if f.signature.input_arg and f.node_def)
    func.node_def.add(name="again", op=func.signature.name,
                      input=[a.name for a in func.signature.input_arg])
    (path / "saved_model.pb").write_bytes(model.SerializeToString())
    result = freeze(path, "-o", tmp_path / "out.pb")
    assert_refused(result, tmp_path, "saved_model.pb", f"'{func.signature.name}' calls itself")


def test_verify_refuses_absurd_sample_inputs(freeze, tmp_path):
    """[None, 20000, 20000] float32 is fine as a graph; its 2-row sample input is 3 GiB."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 20000, 20000], name="x")
        tf.identity(x * 2.0, name="probs")
    model = tmp_path / "model.pb"
    model.write_bytes(graph.as_graph_def().SerializeToString())
    result = freeze("--graph", model, "--outputs", "probs", "-o", tmp_path / "out.pb")
    assert_refused(result, tmp_path, "model.pb", "input 'x", "--no-verify")
