"""cli/flags.json is what the built-in stages' and sources' option dataclasses declare."""

from __future__ import annotations

from graphfreeze_cli import flags


def test_flags_json_is_what_the_options_declare():
    assert flags.derive() == flags._index(), \
        "cli/flags.json is stale: run python -m graphfreeze_cli.flags"  # noqa: SLF001


def test_every_flag_once_with_a_type_click_takes():
    for kind in ("stage", "source"):
        declared = flags.declared(kind)
        assert declared and len({f.flag for f in declared}) == len(declared)
        assert {f.type for f in declared} <= set(flags.TYPES)
    assert [s.flag for s in flags.sources()] == ["--ckpt", "--saved-model", "--keras", "--graph"]
