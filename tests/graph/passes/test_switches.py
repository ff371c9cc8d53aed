import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.builtin import strip_training
from graphfreeze.graph.passes.flags import fold_flags
from graphfreeze.graph.passes.switches import resolve_switches

v1 = tf.compat.v1


def cond_model():
    x = v1.placeholder(tf.float32, [None, 2], name="x")
    training = v1.placeholder_with_default(False, [], name="is_training")
    out = v1.cond(training, lambda: x * 10.0, lambda: x + 1.0)
    tf.identity(out, name="y")


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("flag", [False, True])
def test_constant_predicate_keeps_only_the_live_branch(build, run, v2, flag):
    (v1.enable_control_flow_v2 if v2 else v1.disable_control_flow_v2)()
    try:
        graph = build(cond_model)
    finally:
        v1.enable_control_flow_v2()
    stripped, _ = strip_training(graph, ["y", "x"], {"is_training": flag})
    ops = op_counts(stripped)
    assert not set(ops) & {"If", "StatelessIf", "Switch", "Merge"}, ops
    x = np.array([[1.0, 2.0]], np.float32)
    expected = x * 10 if flag else x + 1
    np.testing.assert_allclose(run(stripped, {"x:0": x}, "y:0"), expected)
    assert not stripped.library.function, "inlined branches leave no functions behind"


def test_switch_needs_a_constant_predicate(build):
    v1.disable_control_flow_v2()
    try:
        graph = build(cond_model)
    finally:
        v1.enable_control_flow_v2()
    untouched, changed = resolve_switches(graph, ["y", "x"])  # predicate is still a placeholder
    assert untouched is graph and not changed
    resolved, changed = resolve_switches(fold_flags(graph, {"is_training": True}), ["y", "x"])
    assert changed
    assert "Switch" in op_counts(graph) and "Mul" in op_counts(resolved)


def test_an_output_only_the_training_branch_computes_is_one_line(sample):
    """cnn_v1's BatchNorm `cond` on keras_learning_phase: its training branch's switch output,
    given as --outputs in the model's folder, is exit 3 naming it (it was a ValueError, exit 1)."""
    import subprocess
    import sys

    folder = sample("cnn_v1")
    name = "sequential/batch_normalization/cond/switch_t"
    done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "--ckpt",
                           "model.ckpt-200", "--outputs", name, "--no-verify"], cwd=folder,
                          capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (f"error: output '{name}' is only computed on the training "
                                   "branch (the flags are folded to inference); give an output "
                                   "inference computes")
    assert not list(folder.glob("*.pb"))
