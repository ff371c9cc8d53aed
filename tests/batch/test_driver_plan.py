"""Batch workers execute the plan the driver prepared: a target, stage and graph pass that exist
only in the caller's registry convert in a worker process, as `freeze` alone would convert them."""

from __future__ import annotations

import hashlib
import json

import pytest
from graphfreeze.graph.passes.builtin import STRIP_PASSES
from graphfreeze.plugins import GraphPass, Stage
from graphfreeze.registry import Registry, parse_target


def count_nodes(graph_def, context):
    """A plugin pass (module level: it travels to workers by reference)."""
    context.notes["nodes_seen_by_plugin"] = len(graph_def.node)
    return graph_def


def tag(state, options):
    import dataclasses

    return dataclasses.replace(state, notes=state.noted(tagged_by="plugin stage"))


def my_registry() -> Registry:
    registry = Registry.default(plugins=False)
    registry.add("pass", "count_nodes", GraphPass("count_nodes", count_nodes))
    registry.add_stage(Stage("tag", tag, "graph", "graph"))
    registry.add_target(parse_target({
        "schema_version": 1, "name": "pb-plugin", "description": "only in this registry",
        "stages": [{"use": "freeze_variables"},
                   {"use": "strip_training", "passes": [*STRIP_PASSES, "count_nodes"]},
                   {"use": "optimize_for_inference"}, {"use": "tag"}, {"use": "export_frozen_graph"},
                   {"use": "verify"}]}, "test"))
    return registry


def test_a_target_only_in_the_callers_registry_runs_in_a_worker(samples, tmp_path, monkeypatch):
    from graphfreeze.batch import run

    iris = samples / "iris" / "model.ckpt-200"
    (tmp_path / "models.toml").write_text(
        'schema_version = 1\n[[model]]\nname = "iris"\n'
        f'source = "{iris}"\noutputs = ["probs"]\ntargets = ["pb-plugin"]\n')
    monkeypatch.chdir(tmp_path)
    report = run("models.toml", cache=None, jobs=1, registry=my_registry())
    (job,) = report.jobs
    assert job.status == "ok", job.error
    (artifact,) = job.artifacts
    car = json.loads((tmp_path / "dist" / "iris" / "model.ckpt-200.pb.json").read_text())
    assert car["target"] == "pb-plugin"
    blob = json.dumps(car)
    assert "nodes_seen_by_plugin" in blob and "plugin stage" in blob
    data = (tmp_path / "dist" / "iris" / "model.ckpt-200.pb").read_bytes()
    assert hashlib.sha256(data).hexdigest() == artifact.sha256


def unpicklable_registry() -> Registry:
    registry = Registry.default(plugins=False)
    registry.add("pass", "local_pass", GraphPass("local_pass", lambda g, c: g))  # a lambda
    registry.add_target(parse_target({
        "schema_version": 1, "name": "pb-lambda", "description": "a pass no worker can load",
        "stages": [{"use": "freeze_variables"}, {"use": "strip_training"},
                   {"use": "optimize_for_inference", "passes": ["local_pass"]},
                   {"use": "export_frozen_graph"}]}, "test"))
    return registry


@pytest.mark.parametrize("registry", [unpicklable_registry])
def test_a_plan_that_cannot_travel_fails_its_job_in_one_line(samples, tmp_path, monkeypatch,
                                                            registry):
    from graphfreeze.batch import run

    monkeypatch.chdir(tmp_path)
    report = run(paths=[str(samples / "iris" / "model.ckpt-200")],
                 options={"outputs": ["probs"], "targets": ["pb-lambda"]}, cache=None, jobs=1,
                 registry=registry())
    (job,) = report.jobs
    assert job.status == "failed" and job.exit_code == 6
    assert "cannot be sent to a worker process" in job.error and "\n" not in job.error
