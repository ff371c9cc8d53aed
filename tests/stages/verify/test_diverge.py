"""The divergence locator: a test-only pass perturbs one weight after optimization; verification
fails and the locator names the layer that reads that weight first, in each target's runtime."""

from __future__ import annotations

import json

import numpy as np
import pytest
from graphfreeze.convert import Request, convert
from graphfreeze.errors import VerificationError
from graphfreeze.graph.passes.builtin import OPTIMIZE_PASSES
from graphfreeze.plugins import GraphPass
from graphfreeze.registry import Registry, parse_target

# iris after optimization: dnn/add_1/folded (MatMul, a fused node the original lacks) reads
# this weight; dnn/add_1 (its BiasAdd, the original's Add) is the nearest common tensor.
WEIGHT = "dnn/add_1/folded_weights"


def perturb(graph_def, context):
    """Add 0.5 to every element of WEIGHT (a Const once frozen)."""
    from graphfreeze.graph.consts import set_tensor, tensor_array

    out = type(graph_def)()
    out.CopyFrom(graph_def)
    node = next(n for n in out.node if n.name == WEIGHT)
    set_tensor(node.attr["value"].tensor, np.array(tensor_array(node.attr["value"].tensor)) + 0.5)
    return out


@pytest.fixture(scope="module")
def registry():
    registry = Registry.default(plugins=False)
    registry.add("pass", "perturb_weight", GraphPass("perturb_weight", perturb, "test only"))
    for target in ("android", "server", "onnx", "tflite"):
        stages = [{"use": s.use, **s.options} for s in registry.target(target).stages]
        for stage in stages:
            if stage["use"] == "optimize_for_inference":
                stage["passes"] = [*OPTIMIZE_PASSES, "perturb_weight"]
        registry.add_target(parse_target({"schema_version": 1, "name": f"{target}-perturbed",
                                          "description": "test", "stages": stages}, "test"))
    return registry


@pytest.mark.parametrize("target,node,op", [
    ("android", "dnn/add_1", "BiasAdd"), ("server", "dnn/add_1", "BiasAdd"),
    ("onnx", "dnn/add_1", "BiasAdd"),
    ("tflite", "dnn/Relu_1", "Relu"),  # FULLY_CONNECTED fuses MatMul, BiasAdd and Relu
])
def test_the_perturbed_layer_is_named_first(sample, registry, tmp_path, target, node, op):
    model_dir = sample("iris")
    with pytest.raises(VerificationError) as failed:
        convert(Request(source=str(model_dir), outputs=("probs",),
                        targets=(f"{target}-perturbed",), output=f"{tmp_path}/out/"), registry)
    report = failed.value.divergence
    first = report["first"][0]
    assert first["node"] == node and first["op"] == op, report
    assert first["max_abs_diff"] > 1e-3 and first["agreeing_inputs"] == ["dnn/Relu"], report
    assert report["compared"] >= 3 and "dnn/add_1/folded" in report["folded_examples"]
    assert any(line.strip().startswith(f"{node} ") for line in failed.value.details)
    assert not (tmp_path / "out").exists()  # nothing written


def test_explain_on_a_passing_run_goes_to_the_sidecar_and_terminal(sample, freeze, tmp_path):
    model_dir = sample("cnn_v2")  # batch norms folded: matched at the nearest common tensor
    result = freeze(model_dir, "--outputs", "probs", "--target", "android,onnx", "--explain",
                    "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    assert "every compared tensor agrees" in result.output
    for suffix in ("pb", "onnx"):
        car = json.loads((tmp_path / f"model.ckpt-200.{suffix}.json").read_text())
        divergence = car["verification"]["divergence"]
        assert divergence["available"] and divergence["first"] == []
        assert divergence["compared"] >= 5 and divergence["not_in_original"] >= 1


def test_a_failing_cli_run_prints_the_table_then_one_error(sample, freeze, tmp_path):
    model_dir = sample("iris")
    result = freeze(model_dir, "--outputs", "probs", "--tolerance", "1e-12", "--target",
                    "onnx", "-o", f"{tmp_path}/x.onnx")
    assert result.exit_code == 5, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: ") and "where it diverges" in result.output


def test_a_fixed_batch_is_located_row_by_row_on_many_rows(sample, freeze, tmp_path,
                                                          monkeypatch):
    """--inputs fixes batch 1 and --verify-data has 8 rows: verification runs them one at a
    time, and so does the locator (it fed all 8 at once: an internal error)."""
    model_dir = sample("cnn_v2")
    rows = np.random.default_rng(0).random((8, 16, 16, 3)).astype(np.float32)
    np.savez(model_dir / "rows.npz", images=rows)
    monkeypatch.chdir(model_dir)
    fixed = ("--outputs", "probs", "--inputs", "images[1,16,16,3]", "--verify-data", "rows.npz")
    result = freeze(".", *fixed, "--target", "android,onnx", "--explain",
                    "-o", f"{tmp_path}/ok/")
    assert result.exit_code == 0, result.output
    for suffix in ("pb", "onnx"):
        car = json.loads((tmp_path / "ok" / f"model.ckpt-200.{suffix}.json").read_text())
        assert car["verification"]["batch_size"] == 8, car["verification"]
        assert car["verification"]["divergence"]["compared"] >= 5
    result = freeze(".", *fixed, "--tolerance", "1e-12", "--target", "tflite",
                    "-o", f"{tmp_path}/bad/")
    assert result.exit_code == 5, result.output
    assert "where it diverges" in result.output and "images (input)" in result.output
    assert not (tmp_path / "bad").exists()
