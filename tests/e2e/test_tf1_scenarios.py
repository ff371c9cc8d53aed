"""TensorFlow's own test scenarios (issue 24), built by models/zoo_tf1.py and converted by
the real CLI: every target the zoo entry lists writes a verified artifact."""

from __future__ import annotations

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
