"""io/remote: a remote path that names no bucket, or whose bucket cannot be reached, is one line
naming it; by the CLI, -o gs:// is refused before any work and writes nothing locally."""

from __future__ import annotations

import pytest
from graphfreeze.errors import InputError
from graphfreeze.io.remote import reached

from tests.e2e.test_bad_input import assert_failed


def test_a_bucket_out_of_reach_is_one_line():
    def unreachable():
        raise RuntimeError("Error executing an HTTP request: libcurl code 6 meaning 'Could not "
                           "resolve hostname'\nmore")

    with pytest.raises(InputError, match=r"^gs://b/x.pb: cannot reach it \(Error executing an HTTP "
                                         r"request: .*hostname'\); check the bucket's name"):
        reached("gs://b/x.pb", unreachable)
    assert reached("gs://b/x.pb", lambda: 7) == 7


def test_o_gs_without_a_bucket(sample, freeze, monkeypatch):
    folder = sample("iris")
    monkeypatch.chdir(folder)
    before = sorted(p.name for p in folder.iterdir())
    for out in ("gs://", "gs:///"):
        assert_failed(freeze("model.ckpt-200", "--outputs", "probs", "-o", out), 4,
                      f"{out}: names no bucket; give gs://BUCKET/PATH")
    assert sorted(p.name for p in folder.iterdir()) == before  # no local `gs:` folder
