"""needed_bytes: the weights a checkpoint's outputs need, from its meta graph and index alone
(models/big.py scaled down: an embedding table and a small head)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def small_big(tmp_path_factory):
    """models/big.py with 1000 rows: its checkpoint files."""
    from graphfreeze.sources.checkpoint_files import locate

    from tests.conftest import _run

    out = tmp_path_factory.mktemp("small_big")
    _run("big.py", out, "--rows", "1000")
    return locate(str(out / "model.ckpt-1"))


def _stored(files) -> dict[str, int]:
    from graphfreeze.sources.checkpoint_files import checkpoint_variables

    return {row["name"]: row["bytes"] for row in checkpoint_variables(files.prefix)}


def test_the_outputs_need_the_table_and_the_head_not_the_step(small_big):
    from graphfreeze.sources.checkpoint_files import needed_bytes

    stored = _stored(small_big)
    assert needed_bytes(small_big, ["probs:0"]) == \
        sum(size for name, size in stored.items() if name != "global_step")


def test_an_input_cut_leaves_out_what_is_above_it(small_big):
    """Fed at the pooled embedding (a shape given in brackets), only the head is needed."""
    from graphfreeze.sources.checkpoint_files import needed_bytes

    stored = _stored(small_big)
    assert needed_bytes(small_big, ["probs"], ["Mean[?,128]"]) == \
        stored["head/kernel"] + stored["head/bias"]


def test_a_name_that_is_no_node_is_not_judged(small_big):
    from graphfreeze.sources.checkpoint_files import needed_bytes

    assert needed_bytes(small_big, ["prob"]) is None
    assert needed_bytes(small_big, ["probs"], ["nowhere"]) is None
    assert needed_bytes(small_big, []) is None
