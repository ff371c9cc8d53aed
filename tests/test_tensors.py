"""tensors.sample_inputs: seeded inputs respect the batch an input fixes."""

from __future__ import annotations

from graphfreeze.tensors import TensorInfo, sample_inputs


def test_fixed_batch_is_kept_and_shared():
    """x[2048,16] keeps its 2048 rows, and an input of unknown batch beside it gets the same
    count (the rows must line up); alone, an unknown batch gets `batch_size`."""
    x = TensorInfo("x:0", "float32", (2048, 16))
    mask = TensorInfo("mask:0", "int32", (None, 16))
    feeds = sample_inputs([x, mask], 2, seed=0)
    assert feeds["x:0"].shape == (2048, 16) and feeds["mask:0"].shape == (2048, 16)
    assert sample_inputs([mask], 2, seed=0)["mask:0"].shape == (2, 16)


def test_a_fixed_leading_dim_of_a_vector_is_not_a_batch():
    """A rank-1 input of fixed size (a lookup table, a shape) does not set the batch."""
    table = TensorInfo("table:0", "float32", (3,))
    x = TensorInfo("x:0", "float32", (None, 4))
    feeds = sample_inputs([table, x], 2, seed=0)
    assert feeds["table:0"].shape == (3,) and feeds["x:0"].shape == (2, 4)
