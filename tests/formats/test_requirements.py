"""A format names the Python modules it needs: without them its targets are a configuration
error naming the pip extra, before any model is opened, and `inspect` skips the format in one
line."""

from __future__ import annotations

import pytest
from graphfreeze.errors import ConfigError, install_hint
from graphfreeze.plugins import Format, Stage
from graphfreeze.registry import Registry, parse_target


def ghost_registry() -> Registry:
    def export(state, options):
        raise AssertionError("never reached: the plan refuses the target first")

    registry = Registry.default(plugins=False)
    stage = Stage("export_ghost", export, "graph", "artifact", suffix=".ghost")
    registry.add_format(Format("ghost", stage, open=export, gaps=lambda g, ops: None,
                               requires=("no_such_module_xyz",), extra="ghost"))
    registry.add_target(parse_target({
        "schema_version": 1, "name": "ghost", "description": "needs a missing module",
        "stages": [{"use": "freeze_variables"}, {"use": "strip_training"},
                   {"use": "export_ghost"}]}, "test"))
    return registry


def test_a_format_whose_modules_are_missing_is_refused_at_plan_time(tmp_path):
    from graphfreeze.convert import Request, prepare

    request = Request(source=str(tmp_path / "no-model-here"), targets=("ghost",))
    with pytest.raises(ConfigError) as err:  # before the (missing) model is even looked at
        prepare(request, ghost_registry())
    assert str(err.value) == ("target 'ghost': the ghost format needs no_such_module_xyz, not "
                              f"installed; {install_hint('ghost')}")
    assert err.value.exit_code == 6


def test_inspect_skips_the_format_and_says_so(samples):
    from graphfreeze.inspect.report import inspect

    report = inspect(str(samples / "iris" / "model.ckpt-200"), registry=ghost_registry())
    assert report["targets"]["ghost"]["summary"] == (
        f"ghost: skipped, needs no_such_module_xyz: {install_hint('ghost')}")
    assert report["targets"]["ghost"]["skipped"] is True
    assert "unsupported" in report["targets"]["onnx"]  # the installed formats are judged


def test_every_built_in_format_declares_what_it_needs():
    formats = {f.name: f for f in Registry.default(plugins=False).formats()}
    assert set(formats) == {"frozen_graph", "saved_model", "tflite", "onnx", "openvino", "web",
                            "litert_lm", "onnx_lm"}
    assert formats["frozen_graph"].requires == formats["saved_model"].requires == ()
    assert formats["onnx"].extra and formats["tflite"].extra and formats["openvino"].extra
    assert all(f.export.produces == "artifact" and f.open for f in formats.values())


def test_every_built_in_format_travels_to_a_worker():
    """Formats pickle by reference (batch workers and Ray tasks get plans and artifacts)."""
    import pickle

    for fmt in Registry.default(plugins=False).formats():
        assert pickle.loads(pickle.dumps(fmt)).name == fmt.name
