"""check_graph_def: each broken graph is one InputError naming the file and node; every real
sample graph (checkpoint meta graphs, SavedModel graphs with their function libraries, frozen
graphs, while loops of both kinds) passes untouched."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.errors import InputError
from graphfreeze.graph.checks.validate import check_graph_def
from graphfreeze.graph.checks.validate_values import check_feed_size, check_import, checked_here
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("broken_graphs", ROOT / "models" / "broken_graphs.py")
broken_graphs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(broken_graphs)
v1 = tf.compat.v1


def frozen_graph(other_samples):
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString((other_samples / "frozen.pb").read_bytes())
    return graph_def


def meta_graph(path):
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString(path.read_bytes())
    return meta.graph_def


def saved_model_graphs(path):
    model = saved_model_pb2.SavedModel()
    model.ParseFromString((path / "saved_model.pb").read_bytes())
    return [m.graph_def for m in model.meta_graphs]


def assert_refused(graph_def, where: str, node: str, phrase: str, check=None) -> str:
    with pytest.raises(InputError) as info:
        (check or check_graph_def)(graph_def, where)
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"{where}: "), line
    assert phrase in line, line
    if node:
        assert f"'{node}'" in line, line
    return line


@pytest.mark.parametrize("roots", [None, ["probs"]], ids=["whole", "what probs needs"])
@pytest.mark.parametrize("name", sorted(broken_graphs.BREAKS))
def test_broken_frozen_graph(other_samples, name, roots):
    """Every break, found by the whole check and by the check of what the outputs need (each
    break is in that part; a name used twice or a version anywhere is the whole graph's)."""
    _, node, phrase = broken_graphs.BREAKS[name]
    line = assert_refused(broken_graphs.broken(frozen_graph(other_samples), name), "model.pb",
                          node, phrase, lambda g, where: check_graph_def(g, where, roots))
    assert "fix" in line or "re-export" in line or "upgrade" in line


def test_a_function_named_in_any_func_attr_is_checked(other_samples):
    """A function kept because a node names it in an attr of its own (`_hidden`, not a call)
    is checked: the passes keep every function a func attr names."""
    graph_def = frozen_graph(other_samples)
    name = broken_graphs.with_function(graph_def)
    twice = next(n for n in graph_def.node if n.name == "twice")
    twice.op = "Identity"  # no call any more: the function is named by `_hidden` alone
    for attr in ("Tin", "Tout", "f"):
        del twice.attr[attr]
    twice.attr["T"].type = 1
    twice.attr["_hidden"].func.name = name
    body = graph_def.library.function[0]
    body.node_def.add(name="again", op=name, input=[body.signature.input_arg[0].name])
    assert_refused(graph_def, "model.pb", "", "calls itself",
                   lambda g, where: check_graph_def(g, where, ["probs"]))


def test_only_what_the_roots_need_is_checked(other_samples):
    graph_def = broken_graphs.broken(frozen_graph(other_samples), "calls_itself")
    probs = next(n for n in graph_def.node if n.name == "probs")
    del probs.input[-1]  # probs no longer waits for the recursive call
    check_graph_def(graph_def, "model.pb", ["probs"])
    assert_refused(graph_def, "model.pb", "", "calls itself")
    assert_refused(graph_def, "model.pb", "", "calls itself",
                   lambda g, where: check_graph_def(g, where, ["twice"]))


def test_the_function_the_recursion_cases_start_from_is_fine(other_samples):
    graph_def = frozen_graph(other_samples)
    broken_graphs.with_function(graph_def)
    check_graph_def(graph_def, "model.pb")


def test_cycle_in_a_checkpoint_meta_graph(samples):
    graph_def = meta_graph(samples / "iris" / "model.ckpt-200.meta")
    matmul = next(n for n in graph_def.node if n.name == "dnn/MatMul_1")
    matmul.input[0] = "probs"
    line = assert_refused(graph_def, "model.ckpt-200.meta", "probs", "depends on itself")
    assert "'dnn/MatMul_1'" in line


def test_bad_padding_in_a_cnn(samples):
    graph_def = meta_graph(samples / "cnn_v1" / "model.ckpt-200.meta")
    conv = next(n for n in graph_def.node if n.op == "Conv2D")
    conv.attr["padding"].s = b"MIDDLE"
    assert_refused(graph_def, "model.ckpt-200.meta", conv.name, "'SAME'")


def test_broken_node_inside_a_saved_model_function(other_samples):
    graph_def = saved_model_graphs(other_samples / "tf2_savedmodel")[0]
    func = next(f for f in graph_def.library.function
                if any(n.op == "MatMul" for n in f.node_def))
    matmul = next(n for n in func.node_def if n.op == "MatMul")
    matmul.input[0] = "nowhere:output:0"
    line = assert_refused(graph_def, "saved_model.pb", matmul.name, "no node or argument 'nowhere'")
    assert f"function '{func.signature.name}'" in line


def test_output_arg_out_of_range_inside_a_function(other_samples):
    graph_def = saved_model_graphs(other_samples / "tf2_savedmodel")[0]
    func, node = next((f, n) for f in graph_def.library.function for n in f.node_def
                      if n.input and n.input[0].count(":") == 2)
    source, out, _ = node.input[0].split(":")
    node.input[0] = f"{source}:{out}:5"
    assert_refused(graph_def, "saved_model.pb", node.name, f"'{source}' output '{out}' has 1 tensor")


def test_every_sample_graph_passes(samples, other_samples):
    graphs = [(p, meta_graph(p)) for p in sorted(samples.glob("*/*.meta"))]
    for path in sorted(p.parent for p in other_samples.glob("*/saved_model.pb")):
        graphs += [(path, g) for g in saved_model_graphs(path)]
    graphs.append((other_samples / "frozen.pb", frozen_graph(other_samples)))
    assert len(graphs) >= 9 and sum(len(g.library.function) for _, g in graphs) > 10
    for path, graph_def in graphs:
        check_graph_def(graph_def, str(path))


def _graph(fn, control_flow_v2: bool):
    if not control_flow_v2:
        v1.disable_control_flow_v2()
    try:
        graph = tf.Graph()
        with graph.as_default():
            fn()
        return graph.as_graph_def()
    finally:
        v1.enable_control_flow_v2()


@pytest.mark.parametrize("control_flow_v2", [False, True])
def test_while_loops_and_conds_pass(control_flow_v2):
    def model():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        flag = v1.placeholder_with_default(False, [], name="flag")
        _, y = tf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t * 2.0),
                             [tf.constant(0), x])
        with tf.control_dependencies([y]):
            z = tf.identity(tf.cond(flag, lambda: y + 1.0, lambda: y - 1.0), name="z")
        tf.identity(z, name="out")

    graph_def = _graph(model, control_flow_v2)
    ops = {n.op for n in graph_def.node}
    assert ("NextIteration" in ops) != control_flow_v2
    check_graph_def(graph_def, "loop.pb")


def test_back_edge_not_from_next_iteration_is_a_cycle():
    def model():
        x = v1.placeholder(tf.float32, [3], name="x")
        tf.while_loop(lambda t: tf.reduce_sum(t) < 10.0, lambda t: t * 2.0, [x])

    graph_def = _graph(model, False)
    merge = next(n for n in graph_def.node if n.op == "Merge")
    nxt = next(n for n in graph_def.node if n.op == "NextIteration")
    nxt.op = "Identity"
    assert_refused(graph_def, "loop.pb", merge.name, "depends on itself")


def test_feed_size():
    check_feed_size("x", [32, 224, 224, 3], "float32", "model.pb")
    with pytest.raises(InputError, match=r"model.pb: input 'x' of shape \[2, 100000, 100000\] "
                                         r"\(float32\) would need 74.5 GiB.*--no-verify"):
        check_feed_size("x", [2, 100000, 100000], np.float32, "model.pb")


IMPORT_CHECKS = pytest.mark.parametrize("check", [check_import, checked_here],
                                        ids=["tensorflow", "graph-shapes"])


@IMPORT_CHECKS
def test_input_of_the_wrong_type_is_refused(other_samples, check):
    """Fuzzing found: TensorFlow's importer raised a ValueError deep in a stage (exit 1). The
    check without TensorFlow (graph/shapes) refuses it the same way."""
    graph_def = frozen_graph(other_samples)
    node = next(n for n in graph_def.node if n.op == "Identity" and n.input)
    node.attr["T"].type = tf.int32.as_datatype_enum
    line = assert_refused(graph_def, "model.pb", "", "TensorFlow cannot import the graph", check)
    assert node.name in line and "int32" in line


@IMPORT_CHECKS
def test_placeholder_of_the_wrong_rank_is_refused(other_samples, check):
    graph_def = frozen_graph(other_samples)
    x = next(n for n in graph_def.node if n.name == "x")
    del x.attr["shape"].shape.dim[0]
    assert_refused(graph_def, "model.pb", "", "Shape must be rank 2", check)


@IMPORT_CHECKS
@pytest.mark.parametrize("attr,value", [
    ("_output_shapes", {"list": {}}),
    ("_class", {"list": {"type": [1, 3]}}),
    ("_class", {"list": {"s": ["bG9jOkBub3doZXJl"]}}),  # loc:@nowhere (base64: a bytes field)
    ("_class", {"list": {"s": ["/w=="]}}),  # b"\xff": not text
])
def test_broken_attrs_tensorflow_reads_on_import(other_samples, attr, value, check):
    from google.protobuf import json_format

    graph_def = frozen_graph(other_samples)
    x = next(n for n in graph_def.node if n.name == "x")
    json_format.ParseDict(value, x.attr[attr])
    assert_refused(graph_def, "model.pb", "", "TensorFlow cannot import the graph", check)


def test_the_check_without_tensorflow_takes_what_it_has_functions_for(other_samples):
    """The sample frozen graph is checked here; an op graph/shapes has no shape function for
    leaves the check to TensorFlow (False), whatever else is wrong with the graph."""
    graph_def = frozen_graph(other_samples)
    assert checked_here(graph_def, "model.pb")
    node = next(n for n in graph_def.node if n.op == "Identity" and n.input)
    node.op = "CheckNumerics"
    node.attr["message"].s = b"x"
    assert not checked_here(graph_def, "model.pb")


def test_const_content_beside_values_is_checked(other_samples):
    """Fuzzing found: a scalar with `float_val` and 3 bytes of `tensor_content` (which
    TensorFlow reads first) failed only when constant folding ran it (exit 1)."""
    graph_def = frozen_graph(other_samples)
    const = next(n for n in graph_def.node if n.op == "Const" and
                 n.attr["value"].tensor.float_val and not n.attr["value"].tensor.tensor_content)
    const.attr["value"].tensor.tensor_content = b"l\x041"
    assert_refused(graph_def, "model.pb", const.name, "3 bytes of content")


def test_function_returning_what_it_does_not_declare(other_samples):
    """Fuzzing found: a function with an output dropped from its signature loaded and froze,
    then a later import failed on the caller's dangling output (exit 1)."""
    graph_def = saved_model_graphs(other_samples / "tf2_savedmodel")[0]
    func = next(f for f in graph_def.library.function if len(f.signature.output_arg) > 1)
    del func.signature.output_arg[-1]
    assert_refused(graph_def, "saved_model.pb", "", f"function '{func.signature.name}' returns")


def test_function_waiting_for_its_argument_passes(tmp_path):
    """Keras 3's exported gradient functions wait for an argument (`^result_grads_0`): valid,
    TensorFlow loads them; a control input naming nothing is still refused."""
    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x):
            with tf.control_dependencies([x]):
                return tf.add(tf.constant([1.0, 2.0]), 1.0, name="waits")

    tf.saved_model.save(Model(), str(tmp_path / "m"))
    [graph_def] = saved_model_graphs(tmp_path / "m")
    func, node = next((f, n) for f in graph_def.library.function for n in f.node_def
                      if any(i.startswith("^") and i[1:] in
                             {a.name for a in f.signature.input_arg} for i in n.input))
    check_graph_def(graph_def, "saved_model.pb")
    node.input.append("^nothing")
    assert_refused(graph_def, "saved_model.pb", "nothing", "which is not in the graph")


@pytest.mark.parametrize("value", [np.array([2, 3], np.int32), np.array([7, 1, 4], np.int64),
                                   np.array(5, np.int32), np.array([2**40, 4], np.int64),
                                   np.array([2.0, 3.0], np.float32)])
@pytest.mark.parametrize("packed", [True, False])
def test_constant_shapes_read_without_numpy_as_tensorflow_reads_them(value, packed):
    """check_sizes reads int32/int64 shapes itself (`freeze scan` imports no numpy for them)."""
    from graphfreeze.graph.checks.validate_values import _values

    tensor = tf.make_tensor_proto(value)
    if not packed and value.dtype != np.float32:  # the values fields, the last one repeated
        field = "int_val" if value.dtype == np.int32 else "int64_val"
        tensor.ClearField("tensor_content")
        tensor.ClearField(field)
        getattr(tensor, field).extend(value.reshape(-1)[:1].tolist())
        value = np.full(value.shape, value.reshape(-1)[0])
    assert _values(tensor) == tf.make_ndarray(tensor).reshape(-1).tolist() == \
        value.reshape(-1).tolist()


# check_graph_def passes most nodes at a glance (attr values, Consts and input spellings seen to
# pass before, nodes listed after what they read): each fault a shortcut might hide is refused.

def _text_graph(text: str):
    from google.protobuf import text_format
    from graphfreeze.proto.ops import versions

    graph_def = text_format.Parse(text, graph_pb2.GraphDef())
    graph_def.versions.producer = versions()["graph_def_version"]
    return graph_def


def _refused(text: str, node: str, phrase: str) -> None:
    line = assert_refused(_text_graph(text), "model.pb", node, phrase)
    assert line.startswith(f"model.pb: node '{node}'"), line


_INT = 'attr { key: "T" value { type: DT_INT32 } }'
_X = ('node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } '
      'attr { key: "shape" value { shape { dim { size: -1 } } } } }')
_UNIQUE = [_X, f'node {{ name: "u" op: "Unique" input: "x" {_INT} }}',
           f'node {{ name: "y" op: "Identity" input: "u:1" {_INT} }}',
           f'node {{ name: "z" op: "AddV2" input: "u:0" input: "u" input: "^y" input: "^x" {_INT} }}']


@pytest.mark.parametrize("backwards", [False, True])
def test_inputs_in_any_spelling_and_order(backwards):
    """Nodes listed before what they read, `u:0` beside `u`: as fine as the usual order and
    spelling; an output past the last, or a node named as one, still refused."""
    nodes = "".join(_UNIQUE[::-1] if backwards else _UNIQUE)
    check_graph_def(_text_graph(nodes), "model.pb")
    wrong = nodes.replace('"u:1"', '"u:2"')
    _refused(wrong, "y", "reads 'u:2' but 'u' (Unique) has 2 outputs")
    named = _X.replace('"x"', '"u:2"')  # read as u's third output, not as this node
    _refused(named + wrong, "y", "reads 'u:2' but 'u' (Unique) has 2 outputs")


def test_attr_placeholder_passes_only_in_a_function():
    """An attr value seen to pass in a function body (an attr placeholder) is not taken for one
    that passes in the graph."""
    placeholder = ('{ name: "p" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } '
                   'attr { key: "shape" value { placeholder: "s" } } }')
    function = ('library { function { signature { name: "f" output_arg { name: "o" type: DT_INT32 '
                f'}} }} node_def {placeholder} ret {{ key: "o" value: "p:output:0" }} }} }}')
    check_graph_def(_text_graph(function), "model.pb")
    _refused(function + "node " + placeholder, "p", "attr 'shape' of the wrong type (placeholder")


def test_a_const_value_seen_before_with_another_dtype_is_refused():
    const = ('node { name: "%s" op: "Const" attr { key: "dtype" value { type: %s } } '
             'attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 1 } } } }')
    check_graph_def(_text_graph(const % ("one", "DT_FLOAT")), "model.pb")
    _refused(const % ("one", "DT_FLOAT") + const % ("other", "DT_INT32"), "other",
             "holds a DT_FLOAT value but says dtype DT_INT32")


def test_control_inputs_like_the_node_befores_are_checked():
    """Nodes often wait for the same nodes as the node before (tf.control_dependencies): one
    more that is not in the graph is still refused."""
    waits = [f'node {{ name: "{name}" op: "NoOp" input: "^x" input: "^y" }}' for name in "ab"]
    nodes = _X + f'node {{ name: "y" op: "Identity" input: "x" {_INT} }}' + "".join(waits)
    check_graph_def(_text_graph(nodes), "model.pb")
    gone = nodes + 'node { name: "c" op: "NoOp" input: "^x" input: "^y" input: "^gone" }'
    _refused(gone, "c", "waits for 'gone', which is not in the graph")


def test_checking_leaves_the_graph_as_it_was():
    """A Placeholder without its (optional) shape attr: checking it twice passes, and no attr
    is added to the graph (reading a missing map key would add an empty one)."""
    graph_def = graph_pb2.GraphDef()
    graph_def.versions.producer = 1700
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = tf.float32.as_datatype_enum
    before = graph_def.SerializeToString()
    check_graph_def(graph_def, "model.pb")
    check_graph_def(graph_def, "model.pb")
    assert graph_def.SerializeToString() == before
