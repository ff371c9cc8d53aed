"""A TFLite model whose converter fixed the batch at 1 and folded it into a Reshape (a
YOLOv8-like head, models/zoo_vision.py `detector_head`): it runs at batch 2 but its output is
(1, 2N, C), so verification runs it row by row and compares (2, N, C) with the original."""

from __future__ import annotations

import json

import numpy as np


def test_folded_batch_verifies_row_by_row(zoo, freeze, tmp_path):
    path, args = zoo("detector_head")
    result = freeze(path, *args, "--target", "tflite,tflite-fp16", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    checks = [json.loads(p.read_text())["verification"] for p in tmp_path.glob("*.json")]
    assert len(checks) == 2 and all(c["passed"] and c["batch_size"] == 2 for c in checks)

    from graphfreeze.formats.tflite.interpreter import invoke, output_values, run_batched

    model = str(tmp_path / "model.tflite")
    x = np.random.default_rng(0).random((3, 16, 16, 3), dtype=np.float32)
    assert output_values(invoke(model, {"image": x}), ["boxes"])[0].shape == (1, 240, 6)
    got = run_batched(model, {"image": x},
                      lambda interp: {"boxes": output_values(interp, ["boxes"])[0]})["boxes"]
    rows = [output_values(invoke(model, {"image": x[k:k + 1]}), ["boxes"])[0] for k in range(3)]
    assert got.shape == (3, 80, 6)
    np.testing.assert_array_equal(got, np.concatenate(rows))


def test_folded_batch_still_catches_a_difference(zoo, freeze, tmp_path):
    path, args = zoo("detector_head")  # float16 weights differ; compared finitely, not as inf
    result = freeze(path, *args, "--target", "tflite-fp16", "--tolerance", "0", "-o",
                    f"{tmp_path}/")
    assert result.exit_code == 5, result.output
    last = result.output.strip().splitlines()[-1]
    assert "differs by up to" in last and " inf " not in last, last
    assert not list(tmp_path.iterdir())
