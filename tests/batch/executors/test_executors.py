"""Executors are registered like sources: a plugin's executor runs jobs; an unknown name is one
line naming the registered ones, before any job is prepared."""

from __future__ import annotations

import pytest
from graphfreeze.errors import ConfigError
from graphfreeze.registry import Registry


class InlineExecutor:
    """A plugin executor: every job in this process, one after another."""

    name = "inline"
    summary = "in the calling process"
    used = 0

    @classmethod
    def create(cls, options):
        return cls()

    def run(self, tasks, on_done):
        from graphfreeze.batch.worker import convert_job

        for key, args in tasks:
            InlineExecutor.used += 1
            on_done(key, convert_job(*args), 1)


def test_a_plugin_executor_runs_the_jobs(samples, tmp_path, monkeypatch):
    from graphfreeze.batch import run

    registry = Registry.default(plugins=False)
    registry.add("executor", "inline", InlineExecutor, "tests")
    monkeypatch.chdir(tmp_path)
    report = run(paths=[str(samples / "iris" / "model.ckpt-200")],
                 options={"outputs": ["probs"]}, cache=None, executor="inline", registry=registry)
    (job,) = report.jobs
    assert job.status == "ok", job.error
    assert InlineExecutor.used == 1 and (tmp_path / "dist" / "model.ckpt-200" /
                                         "model.ckpt-200.pb").stat().st_size > 0


def test_built_in_executors_are_registered():
    registry = Registry.default(plugins=False)
    assert registry.names("executor") == ["local", "ray"]
    assert all(registry.executor(n).name == n for n in ("local", "ray"))


def test_unknown_executor_is_one_line_before_any_work(tmp_path, freeze):
    from graphfreeze.batch import run

    with pytest.raises(ConfigError, match=r"unknown executor 'rya'; did you mean ray\? "
                                          r"\(executors: local, ray\)"):
        run(paths=[str(tmp_path / "missing")], executor="rya")
    result = freeze("batch", str(tmp_path / "missing"), "--executor", "nope")
    assert result.exit_code == 6
    assert "unknown executor 'nope'" in result.output + result.stderr
