"""cli/flags.json and each format folder's flags.json are what the built-in stages' and sources'
option dataclasses declare."""

from __future__ import annotations

import importlib
from pathlib import Path

from graphfreeze_cli import flags


def test_flags_json_is_what_the_options_declare():
    import json

    assert flags.derive() == json.loads(flags.INDEX.read_text()), \
        "cli/flags.json is stale: run python -m graphfreeze_cli.flags"


def test_each_format_s_flags_are_in_its_folder():
    import json

    from graphfreeze.registry import Registry

    for fmt in Registry.default(plugins=False).formats():
        path = Path(importlib.import_module(fmt.package).__file__).with_name("flags.json")
        said = json.loads(path.read_text()) if path.exists() else []
        assert flags.derive_format(fmt) == said, \
            f"{path} is stale: run python -m graphfreeze_cli.flags"
    assert "--opset" not in {f["flag"] for f in json.loads(flags.INDEX.read_text())["stage"]}
    assert "--opset" in {f.flag for f in flags.declared("stage")}  # collected from onnx/


def test_every_flag_once_with_a_type_click_takes():
    for kind in ("stage", "source"):
        declared = flags.declared(kind)
        assert declared and len({f.flag for f in declared}) == len(declared)
        assert {f.type for f in declared} <= set(flags.TYPES)
    assert [s.flag for s in flags.sources()] == ["--ckpt", "--saved-model", "--keras", "--graph"]
