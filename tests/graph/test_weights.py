"""A frozen checkpoint's big constants held apart from its GraphDef (graph/weights.py): the same
bytes as a graph that holds them, and the freeze's peak memory near the frozen graph's size."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graphfreeze.graph.consts import WEIGHT_ATTR, const_value, make_const
from graphfreeze.graph.graphdefs import reachable, topo_order
from graphfreeze.graph.inputs import inference_subgraph
from graphfreeze.graph.ops import VARIABLE_OPS
from graphfreeze.graph.passes.builtin import optimize_for_inference, run_passes, strip_training
from graphfreeze.graph.serialize import serialize_chunks
from graphfreeze.graph.variables import variables_to_constants
from graphfreeze.graph.weights import Weights, attach, attached_node, held, is_held
from graphfreeze.names import flag_nodes
from graphfreeze.plugins import GraphPass
from graphfreeze.proto.tf import graph_pb2
from graphfreeze.sources.checkpoint import CheckpointModel

from tests.peak_rss import freeze_peak_mb


def _frozen_bytes(prefix: str, output: str, apart: bool) -> tuple[bytes, int]:
    """The android graph stages' bytes, and how many constants were held apart."""
    model = CheckpointModel(prefix)
    graph_def = inference_subgraph(model.graph_def, [output], [])
    dtypes = {n.name: n.attr["dtype"].type for n in graph_def.node if n.op in VARIABLE_OPS}
    flags = flag_nodes(model.graph_def, reachable(model.graph_def, [output]), set())
    with held(Weights() if apart else None) as weights:
        frozen = variables_to_constants(graph_def, dtypes, model.read_variables)
        count = sum(map(is_held, frozen.node))
        frozen, _ = strip_training(frozen, [output], flags)
        frozen = optimize_for_inference(frozen, [output])
    if weights is not None:
        weights.keep_only(frozen)
        assert set(weights.arrays) == {n.attr[WEIGHT_ATTR].s.decode() for n in frozen.node
                                       if is_held(n)}
    return b"".join(serialize_chunks(frozen, topo_order(frozen), weights)), count


@pytest.mark.parametrize("folder", ["samples/cnn_v1", "samples/cnn_v2", "wide"])
def test_held_apart_the_graph_is_the_same_bytes(request, folder):
    fixture, _, name = folder.partition("/")
    prefix = str(request.getfixturevalue(fixture) / name / "model.ckpt-200")
    apart, count = _frozen_bytes(prefix, "probs", apart=True)
    whole, none = _frozen_bytes(prefix, "probs", apart=False)
    assert count > 0 and none == 0
    assert apart == whole


def _held_node(weights, value, **attrs):
    with held(weights):
        node = make_const("w", value)
    for key, attr in attrs.items():
        node.attr[key].CopyFrom(attr)
    return node


def test_a_held_node_streams_as_protobuf_writes_it():
    """The spliced form (its value's bytes last) and the fallback (an attr after `value`)."""
    from graphfreeze.proto.tf import attr_value_pb2

    weights = Weights()
    value = np.arange(4096, dtype=np.float32).reshape(64, 64)
    extra = attr_value_pb2.AttrValue(s=b"x")
    for attrs in ({}, {"_class": extra}, {"zzz": extra}):
        node = _held_node(weights, value, **attrs)
        assert not node.attr["value"].tensor.tensor_content
        graph = graph_pb2.GraphDef()
        graph.node.add().CopyFrom(node)
        graph.versions.producer = 1
        whole = graph_pb2.GraphDef()
        whole.CopyFrom(graph)
        attach(whole, weights)
        assert WEIGHT_ATTR not in whole.node[0].attr
        assert b"".join(bytes(c) for c in serialize_chunks(graph, None, weights)) == \
            whole.SerializeToString(deterministic=True)
        assert attached_node(node, weights) == whole.node[0]


def test_values_are_held_only_when_big_and_while_held():
    weights = Weights()
    with held(weights):
        small = make_const("s", np.ones(10, np.float32))
        big = make_const("b", np.ones(2048, np.float32))
    loose = make_const("l", np.ones(2048, np.float32))
    assert not is_held(small) and is_held(big) and not is_held(loose)
    with held(weights):
        assert const_value({"b": big}, "b").sum() == 2048
        with pytest.raises(ValueError):  # read-only, as a value read from a tensor is
            const_value({"b": big}, "b")[0] = 2


def test_weights_a_kept_state_shares_are_copied_before_they_change():
    weights = Weights()
    node = _held_node(weights, np.zeros(2048, np.float32))
    weights.shared = True
    mine = weights.owned()
    mine.release(node)
    assert not mine.arrays and weights.value(node).shape == (2048,)
    assert weights.owned() is not weights and mine.owned() is mine


def test_only_a_fresh_read_no_kept_state_shares_is_edited_in_place():
    weights = Weights()
    fresh = np.frombuffer(bytearray(8192), np.float32)
    node = _held_node(weights, fresh)
    assert weights.editable(node) is None  # held without `own`: another may hold its memory
    weights.hold(node, fresh, own=True)
    weights.shared = True  # a later target's state holds it too
    assert weights.editable(node) is None and weights.owned().editable(node) is None
    weights.shared = False
    value = weights.editable(node)
    value += 1  # the one writer, once: then it is the new node's
    assert weights.value(node)[0] == 1 and weights.editable(node) is None
    weights.hold(node, np.frombuffer(bytes(8192), np.float32), own=True)
    assert weights.editable(node) is None  # read-only memory


def test_a_source_that_keeps_its_values_never_has_them_edited():
    """variables_to_constants holds a source's values as its own only when the source says
    they are (`values_owned`: the checkpoint's fresh reads); a plugin's cached arrays stay."""
    import tensorflow as tf
    from graphfreeze.graph.variables import variables_to_constants
    from graphfreeze.sources.checkpoint import CheckpointModel
    from graphfreeze.sources.frozen import FrozenModel

    with tf.Graph().as_default() as graph:
        var = tf.compat.v1.get_variable("v", [64, 32], use_resource=False)
        tf.identity(var, name="y")
    kept = {"v": np.ones((64, 32), np.float32)}  # a plugin's cache
    editable = {}
    for own in (False, True):
        with held(Weights()) as weights:
            frozen = variables_to_constants(graph.as_graph_def(), {"v": 1},
                                            lambda names: ((n, kept[n]) for n in names), own)
        node = next(n for n in frozen.node if n.name == "v")
        editable[own] = weights.editable(node) is not None
    assert editable == {False: False, True: True}
    assert CheckpointModel.values_owned and not hasattr(FrozenModel, "values_owned")


def test_a_plugin_pass_gets_the_values_in_its_graph():
    weights = Weights()
    graph = graph_pb2.GraphDef()
    graph.node.add().CopyFrom(_held_node(weights, np.full(2048, 3, np.float32)))
    seen = []

    def plugin(graph_def, _context):
        seen.append(np.frombuffer(graph_def.node[0].attr["value"].tensor.tensor_content,
                                  np.float32).sum())
        return graph_def

    with held(weights):
        run_passes(graph, [GraphPass("plugin", plugin)], ["w"], {}, {})
    assert seen == [3 * 2048]


@pytest.fixture(scope="module")
def wide_dir(wide, tmp_path_factory):
    """A copy of the wide checkpoint's folder that this module's runs write into."""
    return Path(shutil.copytree(wide, tmp_path_factory.mktemp("wide") / "wide"))


def test_freezing_holds_the_weights_about_once(wide_dir):
    """The android run of the checkpoint's `probs` peaks at most 1.25x the frozen graph's size
    above the same run of an output that needs no weights (1.03x: each weight read once into
    memory fold_batch_norms then scales in place; it was 3x with the weights copied by
    strip_training and replaced by fold_batch_norms inside the graph's protobuf, 1.33x with
    each folded layer a new array)."""
    base = freeze_peak_mb(["--ckpt", "model.ckpt-200", "--outputs", "mean", "--no-verify",
                           "-o", "mean.pb"], wide_dir)
    peak = freeze_peak_mb(["--ckpt", "model.ckpt-200", "--outputs", "probs", "--no-verify",
                           "-o", "probs.pb"], wide_dir)
    size = (wide_dir / "probs.pb").stat().st_size / 2**20
    assert size > 40
    assert peak - base < 1.25 * size, (peak, base, size)


def test_freezing_a_frozen_graph_holds_its_weights_about_once(wide_dir):
    """A frozen graph to android peaks at most 1.25x its size above a run needing no weights:
    its values are held apart as the file is read (graph/held_values.py; it was 2.7x: the
    parse, then the parse and the cut graph; 4x before that)."""
    subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "--ckpt", "model.ckpt-200",
                    "--outputs", "probs", "--no-verify", "-o", "source.pb"], cwd=wide_dir,
                   check=True, capture_output=True)
    base = freeze_peak_mb(["--ckpt", "model.ckpt-200", "--outputs", "mean", "--no-verify",
                           "-o", "mean-again.pb"], wide_dir)
    peak = freeze_peak_mb(["source.pb", "--outputs", "probs", "--no-verify", "-o", "again.pb"],
                          wide_dir)
    size = (wide_dir / "source.pb").stat().st_size / 2**20
    assert (wide_dir / "again.pb").read_bytes() == (wide_dir / "source.pb").read_bytes()
    assert peak - base < 1.25 * size, (peak, base, size)


def test_freeze_graphs_output_folds_in_place_and_verifies(wide_dir):
    """TensorFlow's freeze_graph on the same checkpoint (batch norms not folded): to android
    with its values read once and folded in place (the peak as above); verified, every format
    from it, and the same android bytes: the original's run reads the values as the file has
    them (a run that verifies never edits them: its reference reads them after the fold)."""
    subprocess.run([sys.executable, "-m", "tensorflow.python.tools.freeze_graph",
                    "--input_meta_graph=model.ckpt-200.meta", "--input_checkpoint=model.ckpt-200",
                    "--output_node_names=probs", "--output_graph=peer.pb", "--input_binary"],
                   cwd=wide_dir, check=True, capture_output=True)
    base = freeze_peak_mb(["--ckpt", "model.ckpt-200", "--outputs", "mean", "--no-verify",
                           "-o", "mean-peer.pb"], wide_dir)
    peak = freeze_peak_mb(["peer.pb", "--outputs", "probs", "--no-verify", "-o", "peer-nv.pb"],
                          wide_dir)
    size = (wide_dir / "peer.pb").stat().st_size / 2**20
    assert peak - base < 1.25 * size, (peak, base, size)
    done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "peer.pb", "--outputs",
                           "probs", "--target", "android,server,tflite,onnx,openvino", "-o",
                           "verified/"], cwd=wide_dir, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # every format verified against the held values
    assert (wide_dir / "verified" / "peer.optimized.pb").read_bytes() == \
        (wide_dir / "peer-nv.pb").read_bytes()


def test_a_held_constant_reads_as_its_value_where_inputs_are_drawn():
    """data/domains reads table keys and embedding sizes from Consts: a held one's value."""
    from graphfreeze.data.domains import _const

    weights = Weights()
    with held(weights):
        keys = make_const("keys", np.arange(3000, dtype=np.int64))
        assert is_held(keys)
        assert (_const({"keys": keys}, "keys") == np.arange(3000)).all()


@pytest.mark.parametrize("targets", ["android,server", "server,android"])
def test_targets_sharing_the_frozen_graph_write_the_same_graph(wide_dir, targets):
    """Held weights shared by two targets' states (the server export gets them put back into
    the graph, in either order): the android graph is the one a run of android alone writes."""
    run = [sys.executable, "-m", "graphfreeze_cli.main", "--ckpt", "model.ckpt-200", "--outputs",
           "probs", "--force"]
    out = f"out-{targets.replace(',', '-')}/"
    subprocess.run([*run, "--no-verify", "-o", "alone.pb"], cwd=wide_dir, check=True,
                   capture_output=True)
    done = subprocess.run([*run, "--target", targets, "-o", out], cwd=wide_dir,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    alone = (wide_dir / "alone.pb").read_bytes()
    assert (wide_dir / out / "model.ckpt-200.pb").read_bytes() == alone
    assert (wide_dir / out / "model.ckpt-200.savedmodel" / "saved_model.pb").exists()


def test_a_fold_in_place_leaves_the_state_another_target_shares(wide_dir, tmp_path):
    """android folds its batch norms into the weights in place; server, with no fold, starts
    from the state both share (after strip_training): its SavedModel is the one it writes
    alone, in either order."""
    from graphfreeze.convert import Request, convert

    plain = {"server": {"passes": ("remove_identities",)}}
    source = str(wide_dir / "model.ckpt-200")
    for targets in (("android", "server"), ("server", "android")):
        out = tmp_path / "-".join(targets)
        convert(Request(source=source, outputs=("probs",), targets=targets, verify=False,
                        output=f"{out}/", target_options=plain))
    convert(Request(source=source, outputs=("probs",), targets=("server",), verify=False,
                    output=str(tmp_path / "alone"), target_options=plain))
    files = {}
    for name in ("android-server", "server-android", "alone"):
        folder = tmp_path / name / "model.ckpt-200.savedmodel" if name != "alone" else \
            tmp_path / "alone"
        files[name] = {p.relative_to(folder): p.read_bytes()
                       for p in folder.rglob("*") if p.is_file()}
    assert files["android-server"] == files["alone"] == files["server-android"]
    assert (tmp_path / "android-server" / "model.ckpt-200.pb").read_bytes() == \
        (tmp_path / "server-android" / "model.ckpt-200.pb").read_bytes()


def test_a_model_carrying_the_reserved_attr_is_refused(tmp_path):
    """A frozen graph whose Const has graphfreeze's own marker: one line, exit 3 (not a value
    looked up in weights it never had)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")
        tf.matmul(x, tf.constant(np.ones((64, 32), np.float32), name="w"), name="y")
    graph_def = graph.as_graph_def()
    next(n for n in graph_def.node if n.name == "w").attr[WEIGHT_ATTR].s = b"w0"
    (tmp_path / "model.pb").write_bytes(graph_def.SerializeToString())
    done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "model.pb", "--outputs",
                           "y"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == ("error: model.pb: node 'w' (Const) has attr '_graphfreeze_weight', "
                                   "which graphfreeze reserves; re-export the graph without it")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pb"]
