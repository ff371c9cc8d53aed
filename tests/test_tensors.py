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


def test_string_inputs_are_drawn_from_the_table_keys_and_misses():
    """A string input looked up in a table gets its keys (hits) and other words (misses); one
    whose graph says nothing gets short words of a small alphabet; words are joined by spaces
    where the model splits them."""
    from graphfreeze.data.domains import Domain

    keys = (b"red", b"green", b"blue")
    color = TensorInfo("color:0", "string", (None, 3), Domain(keys=keys))
    free = TensorInfo("free:0", "string", (None,))
    text = TensorInfo("text:0", "string", (None,), Domain(keys=keys, words=True))
    feeds = sample_inputs([color, free, text], 64, seed=0)
    values = set(feeds["color:0"].reshape(-1).tolist())
    assert feeds["color:0"].shape == (64, 3) and feeds["color:0"].dtype == object
    assert values & set(keys) and values - set(keys)
    assert all(set(v.decode()) <= set("abcdefgh") for v in feeds["free:0"])
    assert any(b" " in v for v in feeds["text:0"])


def test_token_ids_stay_within_the_vocabulary_and_int_keys_hit_and_miss():
    from graphfreeze.data.domains import Domain

    tokens = TensorInfo("tokens:0", "int32", (None, 5), Domain(vocabulary=7))
    code = TensorInfo("code:0", "int64", (None,), Domain(keys=(3, 7, 11)))
    feeds = sample_inputs([tokens, code], 200, seed=0)
    assert feeds["tokens:0"].min() >= 0 and feeds["tokens:0"].max() == 6
    codes = set(feeds["code:0"].tolist())
    assert codes & {3, 7, 11} and codes - {3, 7, 11}


def test_a_ragged_input_gets_row_splits_that_fit_its_values():
    from graphfreeze.data.domains import Domain

    words = TensorInfo("words:0", "string", (None,))
    splits = TensorInfo("words_1:0", "int64", (None,), Domain(splits_of="words:0"))
    feeds = sample_inputs([words, splits], 3, seed=0)
    row_splits = feeds["words_1:0"]
    assert len(row_splits) == 4 and row_splits[0] == 0 and (row_splits[1:] > row_splits[:-1]).all()
    assert len(feeds["words:0"]) == row_splits[-1]


def test_nested_ragged_splits_split_each_other_outermost_first():
    """ragged_rank 2 (`words`, `words_1` rows, `words_2` inner): each level splits the next."""
    from graphfreeze.data.domains import Domain

    infos = [TensorInfo("words:0", "string", (None,)),
             TensorInfo("words_2:0", "int64", (None,), Domain(splits_of="words:0", level=2)),
             TensorInfo("words_1:0", "int64", (None,), Domain(splits_of="words:0", level=1))]
    feeds = sample_inputs(infos, 2, seed=0)
    outer, inner = feeds["words_1:0"], feeds["words_2:0"]
    assert len(outer) == 3 and len(inner) == outer[-1] + 1 and len(feeds["words:0"]) == inner[-1]
