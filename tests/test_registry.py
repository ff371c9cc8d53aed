"""The registry: built-ins, targets as data, plugins through real installed entry points."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
from graphfreeze import plan
from graphfreeze.errors import ConfigError
from graphfreeze.plugins import Stage
from graphfreeze.registry import Registry, parse_target


def test_builtins_and_android_target():
    registry = Registry.default(plugins=False)
    assert "android" in registry.target_names()
    android = registry.target("android")
    assert [s.use for s in android.stages] == [
        "freeze_variables", "strip_training", "optimize_for_inference", "export_frozen_graph", "verify",
        "benchmark"]
    for use in android.stages:
        assert registry.stage(use.use).name == use.use


def test_duplicate_names_name_both_providers():
    registry = Registry.default(plugins=False)
    clone = Stage("verify", lambda s, o: s, "artifact", "artifact")
    with pytest.raises(ConfigError, match="stage 'verify' is provided twice: by graphfreeze and by acme"):
        registry.add_stage(clone, provider="acme")


@pytest.mark.parametrize("data,message", [
    ({"schema_version": 2, "name": "x", "description": "d", "stages": [{"use": "a"}]},
     "schema_version must be 1"),
    ({"schema_version": 1, "name": "x", "description": "d", "stages": []}, "non-empty list"),
    ({"schema_version": 1, "name": "x", "description": "d", "stages": [{"with": 1}]},
     r"stages\[0\] needs use"),
    ({"schema_version": 1, "name": "x", "description": "d", "stages": [{"use": "a"}], "x": 1},
     "unknown key x"),
])
def test_malformed_targets_are_refused(data, message):
    with pytest.raises(ConfigError, match=message):
        parse_target(data, "t.toml")


PLUGIN = '''
from dataclasses import dataclass, replace
from graphfreeze.plugins import Stage

CALLS = []

@dataclass(frozen=True)
class Opts:
    label: str = "x"

def _tag(state, options):
    CALLS.append(options.label)
    return replace(state, notes=state.noted(tagged=options.label))

def tag_stage():
    return Stage("tag", _tag, "graph", "graph", Opts, "records a label")

TARGET = {
    "schema_version": 1, "name": "tagged-android", "description": "android plus a tag",
    "stages": [{"use": "freeze_variables"}, {"use": "tag", "label": "hello"},
               {"use": "export_frozen_graph"}],
}
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A tiny distribution installed on sys.path: module + dist-info with entry points."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "gf_plugin_demo.py").write_text(PLUGIN)
    info = site / "gf_plugin_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gf-plugin-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [graphfreeze.stages]
        tag = gf_plugin_demo:tag_stage

        [graphfreeze.targets]
        tagged-android = gf_plugin_demo:TARGET
        """))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield
    sys.modules.pop("gf_plugin_demo", None)


def test_plugin_target_and_stage_from_entry_points(plugin):
    registry = Registry.default()
    assert "tagged-android" in registry.target_names()
    assert "gf_plugin_demo" not in sys.modules, "entry points load only when used"
    assert registry.provider("stage", "tag").startswith("gf-plugin-demo")
    plans = plan.build(registry, ["tagged-android"])
    assert [s.stage.name for s in plans[0].steps] == ["freeze_variables", "tag", "export_frozen_graph"]
    assert plans[0].steps[1].options.label == "hello"


def test_plugin_listed_by_freeze_targets(plugin, freeze):
    result = freeze("targets")
    assert result.exit_code == 0
    assert "tagged-android" in result.output and "android" in result.output


def test_plugin_duplicate_of_builtin_is_refused(tmp_path, monkeypatch):
    site = tmp_path / "site"
    info = site / "gf_dup-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gf-dup\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[graphfreeze.targets]\nandroid = gf_dup:T\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    with pytest.raises(ConfigError, match="target 'android' is provided twice: by graphfreeze "
                                          "and by gf-dup"):
        Registry.default().target_names()  # each kind is read when first used


def test_each_kind_is_read_when_first_used():
    """Listing targets reads their TOMLs and imports no format; sources import no stage."""
    import json
    import subprocess

    code = ("import json, sys; from graphfreeze.registry import Registry; r = Registry.default(); "
            "names = r.target_names(); kinds = [s.name for s in r.sources()]; "
            "print(json.dumps([names, kinds, sorted(m for m in sys.modules if m.startswith("
            "('graphfreeze.formats.', 'graphfreeze.stages', 'numpy', 'tensorflow')))]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, kinds, heavy = json.loads(run.stdout)
    assert "android" in names and "onnx" in names and "checkpoint" in kinds
    assert heavy == []


def test_a_target_loads_its_own_format_only(sample, tmp_path):
    """`freeze --target android` (the CLI, in the model's folder) imports the frozen_graph format
    and no other; a stage no format brings has no format, found without loading any."""
    import json
    import subprocess

    code = ("import atexit, json, sys\n"
            "atexit.register(lambda: print(json.dumps(sorted({m.split('.')[2] for m in "
            "sys.modules if m.startswith('graphfreeze.formats.')}))))\n"
            "from graphfreeze_cli.main import main\n"
            "main()")
    folder = sample("cnn_v2")
    run = subprocess.run([sys.executable, "-c", code, "--ckpt", "model.ckpt-200", "--outputs",
                          "probs", "--no-verify", "-o", "out.pb"], cwd=folder,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == ["frozen_graph"]
    registry = Registry.default()
    assert registry.format_of("verify") is None and registry.format_of("export_onnx").name == "onnx"
    assert registry.format_of("compile_npu") is None  # tflite's, not its export stage
    assert registry.format_of("no_such_stage") is None


def test_plugins_load_after_a_package_imported_the_metadata_backport(plugin):
    """pygal (the batch reports' charts) imports importlib_metadata, whose EntryPoint the
    standard importlib.metadata then hands out: a plugin target still loads."""
    import importlib_metadata  # noqa: F401 -- as pygal imports it

    registry = Registry.default()
    plans = plan.build(registry, ["tagged-android"])
    assert [s.stage.name for s in plans[0].steps] == ["freeze_variables", "tag", "export_frozen_graph"]
