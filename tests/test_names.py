import pytest
import tensorflow as tf
from graphfreeze import names
from graphfreeze.errors import InputError

v1 = tf.compat.v1


@pytest.fixture
def graph_def():
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        keep = v1.placeholder_with_default(1.0, [], name="dnn/keep_prob")
        learning = v1.placeholder_with_default(False, [], name="keras_learning_phase")
        other = v1.placeholder_with_default(3.0, [], name="temperature")
        logits = tf.identity(x * keep * other + tf.cast(learning, tf.float32), name="logits")
        tf.nn.softmax(logits, name="probs")
        tf.reduce_mean(logits, name="loss")
    return graph.as_graph_def()


def test_node_and_tensor_names_resolve(graph_def):
    refs = names.resolve(graph_def, names.parse_names("probs, logits:0"), "output", "m.meta")
    assert [r.name for r in refs] == ["probs:0", "logits:0"]


def test_unknown_name_suggests_close_ones(graph_def):
    with pytest.raises(InputError, match=r"output 'prob' not in graph m.meta; did you mean 'probs'"):
        names.resolve(graph_def, ["prob"], "output", "m.meta")


def test_a_tensor_named_twice_is_one_and_a_control_input_spelling_is_refused(graph_def):
    refs = names.resolve(graph_def, ["probs", "probs:0", "logits"], "output", "m.meta")
    assert [r.name for r in refs] == ["probs:0", "logits:0"]  # (a signature's two keys, too)
    with pytest.raises(InputError, match=r"^input '\^x': a control input's spelling; give the "
                                         "tensor, 'x'$"):
        names.resolve(graph_def, ["^x"], "input", "m.meta")


def test_flags_get_inference_values_and_are_not_inputs(graph_def):
    needed = {n.name for n in graph_def.node}
    flags = names.flag_nodes(graph_def, needed, set())
    assert flags == {"dnn/keep_prob": 1.0, "keras_learning_phase": False, "temperature": None}
    outputs = names.resolve(graph_def, ["probs"], "output", "m")
    assert [i.name for i in names.default_inputs(graph_def, outputs, set(flags))] == ["x:0"]


def test_a_name_the_user_gave_comes_before_the_op_it_wraps(samples, freeze):
    """iris_named: probs = tf.identity(tf.nn.softmax(logits), name="probs")."""
    from graphfreeze.sources.checkpoint_files import read_meta_graph

    graph_def = read_meta_graph(str(samples / "iris_named" / "model.ckpt-200.meta")).graph_def
    likely = names.likely_outputs(graph_def)
    assert likely[:2] == ["probs", "Softmax"], likely
    result = freeze("inspect", samples / "iris_named", "--json")
    assert '"name": "probs:0"' in result.output and '"Softmax"' in result.output


def test_likely_outputs_rank_probabilities_first(graph_def):
    assert names.likely_outputs(graph_def)[0] == "probs"
    assert "loss" not in names.likely_outputs(graph_def)


def test_an_output_index_the_node_lacks_names_the_node_and_its_outputs():
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        tf.nn.softmax(x, name="probs")
        tf.split(x, 2, axis=1, name="parts")
        tf.no_op(name="init")
    graph_def = graph.as_graph_def()
    with pytest.raises(InputError, match=r"output 'probs:1': node 'probs' \(Softmax\) in m has 1 "
                                         r"output \(probs:0\)"):
        names.resolve(graph_def, ["probs:1"], "output", "m")
    with pytest.raises(InputError, match=r"input 'x:1': node 'x' \(Placeholder\) in m has 1"):
        names.resolve(graph_def, ["x:1"], "input", "m")
    with pytest.raises(InputError, match=r"node 'parts' \(Split\) in m has 2 outputs \(parts:0, "
                                         r"parts:1\)"):
        names.resolve(graph_def, ["parts:2"], "output", "m")
    with pytest.raises(InputError, match=r"node 'init' \(NoOp\) in m has no outputs, so it "
                                         r"cannot be an output"):
        names.resolve(graph_def, ["init"], "output", "m")
    assert [r.name for r in names.resolve(graph_def, ["parts:1"], "output", "m")] == ["parts:1"]


def _logits_chain(n: int):
    """x -> Neg -> n Identities named logits_i (each an output's name, each wrapping the chain)."""
    from graphfreeze.proto.tf import graph_pb2

    graph = graph_pb2.GraphDef()
    graph.node.add(name="x", op="Placeholder")
    graph.node.add(name="neg", op="Neg", input=["x"])
    for i in range(n):
        graph.node.add(name=f"logits_{i}", op="Identity", input=[f"logits_{i - 1}" if i else "neg"])
    return graph


def test_likely_outputs_walk_each_identity_chain_once():
    """8x the links of an Identity chain named like outputs: well under 20x the CPU (each link
    walked back to the start was quadratic); the user's names first, in graph order."""
    import time

    def cpu(n: int) -> float:
        graph = _logits_chain(n)
        start = time.process_time()
        assert names.likely_outputs(graph)[:2] == ["logits_0", "logits_1"]
        return time.process_time() - start

    cpu(100)
    ratio = min(cpu(8_000) for _ in range(2)) / max(min(cpu(1_000) for _ in range(3)), 1e-3)
    assert ratio < 20, ratio


def test_freeze_suggests_what_inference_reaches_before_training_nodes(sample):
    """`--outputs softmax` in a trained checkpoint's folder: the Softmax inference computes
    (`probs`) first, not the loss's or the gradients' nodes that spell it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder = sample("iris")
    done = subprocess.run([str(Path(sys.executable).with_name("freeze")), "--ckpt",
                           "model.ckpt-200", "--outputs", "softmax"], cwd=folder,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 3, done.stderr
    hint = done.stderr.partition("did you mean ")[2]
    assert hint.startswith("'probs'"), done.stderr
    assert "gradients/" not in hint.split(",")[1], done.stderr
