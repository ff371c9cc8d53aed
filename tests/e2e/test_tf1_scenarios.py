"""TensorFlow's own test scenarios (issue 24), built by models/zoo_tf1.py and converted by
the real CLI: every target the zoo entry lists writes a verified artifact."""

from __future__ import annotations

import json

import numpy as np

from tests.e2e.test_bad_input import assert_failed
from tests.e2e.test_zoo import converted


def test_global_normalization_batch_norm_folds_for_every_target(zoo, freeze, tmp_path):
    """optimize_for_inference's testFoldBatchNorms: the deprecated op is folded into the conv,
    so the server (TensorFlow refuses the op past graph version 8) and onnx targets convert."""
    from tensorflow.core.framework import graph_pb2

    out = converted(zoo, freeze, tmp_path, "global_norm_bn", "android,tflite,onnx")
    frozen = graph_pb2.GraphDef.FromString(next(out.glob("*.pb")).read_bytes())
    ops = {node.op for node in frozen.node}
    assert "BatchNormWithGlobalNormalization" not in ops and "Conv2D" in ops, ops
    path, args = zoo("global_norm_bn")
    result = freeze(path, *args, "--target", "server", "-o", f"{tmp_path}/server/")
    assert result.exit_code == 0, result.output
    assert any((tmp_path / "server").glob("*.savedmodel/saved_model.pb"))


def test_fixed_batch_input_is_verified_at_its_batch(zoo, freeze, tmp_path):
    """saved_model_cli's large-input AOT test: x[2048,16] is fed 2048 rows a run, not 64."""
    out = converted(zoo, freeze, tmp_path, "fixed_batch_savedmodel", "android,tflite,onnx")
    car = json.loads(next(out.glob("*.pb.json")).read_text())
    assert car["inputs"][0]["shape"] == [2048, 16], car["inputs"]
    assert car["verification"]["batch_size"] == 2048, car["verification"]


def test_verify_data_of_another_batch_is_one_line(zoo, freeze, tmp_path):
    path, _ = zoo("fixed_batch_savedmodel")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "short.npz", x=rng.standard_normal((64, 16)).astype(np.float32))
    np.savez(tmp_path / "two.npz", x=rng.standard_normal((4096, 16)).astype(np.float32))
    result = freeze(path, "--target", "android", "--verify-data", tmp_path / "short.npz",
                    "-o", f"{tmp_path}/refused/")
    assert_failed(result, 3, "short.npz", "'x:0' has a fixed batch of 2048", "--no-verify")
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").iterdir())
    result = freeze(path, "--target", "android", "--verify-data", tmp_path / "two.npz",
                    "-o", f"{tmp_path}/two/")
    assert result.exit_code == 0, result.output
    car = json.loads(next((tmp_path / "two").glob("*.pb.json")).read_text())
    assert car["verification"]["passed"] and car["verification"]["batch_size"] == 4096


def test_keep_prob_of_unknown_rank_is_a_flag_not_an_input(zoo, freeze, tmp_path):
    """`keep_prob = tf.placeholder(tf.float32)` (unknown rank) gets its inference value 1.0 like
    a scalar flag; the shapeless `x` is the one input, shaped by `--inputs x[1,4]`."""
    out = converted(zoo, freeze, tmp_path, "shapeless_keep_prob", "android,tflite,onnx")
    car = json.loads(next(out.glob("*.pb.json")).read_text())
    assert [(i["node"], i["shape"]) for i in car["inputs"]] == [("x", [1, 4])], car["inputs"]
    path, _ = zoo("shapeless_keep_prob")
    result = freeze(path, "--outputs", "probs", "--target", "android", "--no-verify",
                    "-o", f"{tmp_path}/unshaped/")
    assert result.exit_code == 0, result.output
    car = json.loads(next((tmp_path / "unshaped").glob("*.pb.json")).read_text())
    assert [i["node"] for i in car["inputs"]] == ["x"], car["inputs"]


def test_tf1_savedmodel_with_its_training_saver_converts(zoo, freeze, tmp_path):
    """The training loop's Saver (SaveV2) stays in the graph, but neither loading nor the
    outputs run it: not refused as writing files."""
    converted(zoo, freeze, tmp_path, "training_saver_savedmodel", "android,tflite,onnx")


def test_defun_calls_are_inlined(zoo, freeze, tmp_path):
    """Nodes whose op is a `Defun` function's name are inlined: onnx converts, and the frozen
    graph holds neither the calls nor the functions."""
    from tensorflow.core.framework import graph_pb2

    out = converted(zoo, freeze, tmp_path, "defun_calls", "android,tflite,onnx")
    frozen = graph_pb2.GraphDef.FromString(next(out.glob("*.pb")).read_bytes())
    ops = {node.op for node in frozen.node}
    assert not ops & {"DenseRelu", "Scale"} and "Relu" in ops, ops
    assert not frozen.library.function, [f.signature.name for f in frozen.library.function]
