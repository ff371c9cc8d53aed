"""Plans are validated whole before any work; common prefixes run once."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from graphfreeze import plan
from graphfreeze.errors import ConfigError
from graphfreeze.plugins import Stage, Target
from graphfreeze.registry import Registry, parse_target


def registry_with(*targets: dict) -> Registry:
    registry = Registry.default(plugins=False)
    for data in targets:
        registry.add_target(parse_target({"schema_version": 1, "description": "t", **data}, "t"))
    return registry


def test_unknown_option_is_refused_before_work():
    registry = registry_with({"name": "t", "stages": [
        {"use": "freeze_variables"}, {"use": "export_frozen_graph", "max_byte": 5}]})
    with pytest.raises(ConfigError, match="target 't', stage 'export_frozen_graph': unknown option max_byte"):
        plan.build(registry, ["t"])


def test_ill_typed_option_is_refused():
    registry = registry_with({"name": "t", "stages": [
        {"use": "freeze_variables"}, {"use": "export_frozen_graph"}, {"use": "verify", "batch_size": "x"}]})
    with pytest.raises(ConfigError, match="option batch_size must be an integer"):
        plan.build(registry, ["t"])


def test_option_values_checked_together_are_refused_before_work():
    registry = registry_with({"name": "t", "stages": [
        {"use": "freeze_variables"}, {"use": "export_tflite", "quantize": "int4"}]})
    with pytest.raises(ConfigError, match="stage 'export_tflite': quantize 'int4': choose one of none"):
        plan.build(registry, ["t"])


def test_stage_kinds_must_chain():
    registry = registry_with({"name": "t", "stages": [{"use": "export_frozen_graph"}]})
    with pytest.raises(ConfigError, match="consumes a graph but gets a model"):
        plan.build(registry, ["t"])


def test_unknown_stage_and_target():
    registry = registry_with({"name": "t", "stages": [{"use": "nope"}]})
    with pytest.raises(ConfigError, match="unknown stage 'nope'"):
        plan.build(registry, ["t"])
    with pytest.raises(ConfigError, match="unknown target 'ios'.*android"):
        plan.build(registry, ["ios"])


def test_override_that_applies_nowhere_is_refused():
    with pytest.raises(ConfigError, match="option colour applies to no stage"):
        plan.build(Registry.default(plugins=False), ["android"], {"colour": 1})


def test_override_reaches_the_stage_and_skip_drops_it():
    plans = plan.build(Registry.default(plugins=False), ["android"], {"tolerance": 0.5})
    verify = next(s for s in plans[0].steps if s.stage.name == "verify")
    assert verify.options.tolerance == 0.5
    plans = plan.build(Registry.default(plugins=False), ["android"], skip={"verify"})
    assert [s.stage.name for s in plans[0].steps][-2:] == ["export_frozen_graph", "benchmark"]


@dataclass(frozen=True)
class FakeState:
    target: str = ""
    output_path: str = ""
    trail: tuple = ()
    weights: object = None
    model: object = None
    release_source: bool = False


def test_common_prefix_runs_once():
    calls = []

    def stage(name, consumes, produces, suffix=None):
        def run(state, _options):
            calls.append((name, state.target))
            return replace(state, trail=state.trail + (name,))
        return Stage(name, run, consumes, produces, suffix=suffix)

    registry = Registry()
    for s in (stage("load", "model", "graph"), stage("shrink", "graph", "graph"),
              stage("write_a", "graph", "artifact", ".a"), stage("write_b", "graph", "artifact", ".b")):
        registry.add_stage(s)
    for name, last in (("a", "write_a"), ("b", "write_b")):
        registry.add_target(Target(name, name, tuple(
            parse_target({"schema_version": 1, "name": name, "description": "d", "stages": [
                {"use": "load"}, {"use": "shrink"}, {"use": last}]}, name).stages)))
    plans = plan.build(registry, ["a", "b"])
    results = plan.run(plans, FakeState(), {"a": "m.a", "b": "m.b"})
    assert [n for n, _ in calls] == ["load", "shrink", "write_a", "write_b"]
    assert results[0].trail == ("load", "shrink", "write_a")
    assert results[1].trail == ("load", "shrink", "write_b")
    assert results[1].output_path == "m.b"


class FakeModel:
    def __init__(self):
        self.seen, self.released = [], []

    def release(self):
        self.released.append(len(self.seen))


@pytest.mark.parametrize(("check_reads", "told", "released"), [(False, 0, 1), (True, 4, 5)])
def test_the_model_lets_its_graph_go_after_the_last_step_reading_it(check_reads, told, released):
    """The last step that runs whose stage reads the model's graph (`source_graph`; b's shared
    prefix runs once, in a) is told so, and the model releases its graph after it."""
    model = FakeModel()

    def stage(name, consumes, produces, suffix=None, reads=False):
        def run(state, _options):
            model.seen.append((name, state.target, state.release_source))
            return state
        return Stage(name, run, consumes, produces, suffix=suffix, source_graph=reads)

    registry = Registry()
    for s in (stage("load", "model", "graph", reads=True), stage("shrink", "graph", "graph"),
              stage("write", "graph", "artifact", ".a"),
              stage("check", "artifact", "artifact", reads=check_reads)):
        registry.add_stage(s)
    for name, uses in (("a", ["load", "shrink", "write"]), ("b", ["load", "shrink", "write", "check"])):
        registry.add_target(Target(name, name, tuple(parse_target({
            "schema_version": 1, "name": name, "description": "d",
            "stages": [{"use": u} for u in uses]}, name).stages)))
    plan.run(plan.build(registry, ["a", "b"]), FakeState(model=model), {"a": "m.a", "b": "m.b"})
    assert [(n, t) for n, t, _ in model.seen] == [("load", "a"), ("shrink", "a"), ("write", "a"),
                                                  ("write", "b"), ("check", "b")]
    assert [i for i, (_, _, last) in enumerate(model.seen) if last] == [told]
    assert model.released == [released]


@pytest.mark.parametrize("target,option", [
    ("tflite", "io_type"), ("tflite", "per_tensor"), ("tflite", "calibration"),
    ("tflite-fp16", "keep_float"), ("tflite-dynamic", "calibration_ranges"),
    ("edge-int16x8", "calibration_ranges"), ("onnx", "calibration")])
def test_an_option_the_target_quantizes_without_is_refused(target, option):
    """The stage has the option but does not read it with the target's own options (a float
    tflite has no integer inputs to type): refused, not silently ignored."""
    value = {"io_type": "uint8", "per_tensor": True, "calibration": "x.npz",
             "keep_float": ("dense",), "calibration_ranges": "average"}[option]
    registry = Registry.default(plugins=False)
    with pytest.raises(ConfigError, match=f"option {option} applies to no stage of {target}"):
        plan.build(registry, [target], {option: value})
    plan.build(registry, [target, "edge-int8"], {option: value})  # one target reads it: taken
    with pytest.raises(ConfigError, match=f"option {option} applies to no stage of target"):
        plan.build(registry, ["edge-int8", target], target_options={target: {option: value}})


@pytest.mark.parametrize(("held", "beside"), [(1 << 10, True), (1 << 20, False)])
def test_a_stage_holding_big_weights_runs_without_the_next_ones_prepare_beside_it(
        monkeypatch, held, beside):
    """verify's reference run starts beside the export (its `prepare`) unless the weights the
    export holds are over plan.OVERLAP_BYTES: it would hold them a second time at once."""
    import numpy as np
    from graphfreeze.graph.weights import Weights

    monkeypatch.setattr(plan, "OVERLAP_BYTES", 1 << 16)
    events = []

    def hold(state, _options):
        return replace(state, weights=Weights({"w": np.zeros(held, np.uint8)}))

    def write(state, _options):
        events.append("write")
        return state

    registry = Registry()
    for s in (Stage("hold", hold, "model", "graph", weights_apart=True),
              Stage("write", write, "graph", "artifact", suffix=".a", weights_apart=True),
              Stage("check", lambda state, _options: state, "artifact", "artifact",
                    prepare=lambda state, _options: events.append("prepare"),
                    weights_apart=True)):
        registry.add_stage(s)
    registry.add_target(Target("t", "t", parse_target({"schema_version": 1, "name": "t",
                                                       "description": "d", "stages": [
        {"use": "hold"}, {"use": "write"}, {"use": "check"}]}, "t").stages))
    plan.run(plan.build(registry, ["t"]), WeightedState(), {"t": "m.a"})
    assert events == (["prepare", "write"] if beside else ["write"])


@dataclass(frozen=True)
class WeightedState(FakeState):
    graph_def: object = None
