"""Budget rules (`--fail-on`, a manifest's `fail_on`): the grammar, what each rule measures, and
a rule that does not parse refused in one line (exit 6) before any work."""

from __future__ import annotations

import math

import pytest
from graphfreeze.batch import budgets
from graphfreeze.errors import ConfigError

from .test_batch import cli


@pytest.mark.parametrize("text, rule", [
    ("size > +5%", ("size", ">", 5.0, True)),
    ("top1 < -0.5%", ("top1", "<", -0.5, True)),
    ("latency>+10%", ("latency", ">", 10.0, True)),
    ("ops > +0", ("ops", ">", 0.0, False)),
    ("  max_diff  >  1e-6 ", ("max_diff", ">", 1e-6, False)),
    ("MEAN_DIFF > +50%", ("mean_diff", ">", 50.0, True))])
def test_rules_parse(text, rule):
    parsed = budgets.parse(text)
    assert (parsed.metric, parsed.op, parsed.change, parsed.percent) == rule
    assert parsed.text == " ".join(text.split())


@pytest.mark.parametrize("text, said", [
    ("size >> 5%", "not a budget rule"), ("size > five", "not a budget rule"),
    ("size >= +5%", "not a budget rule"), ("", "not a budget rule"),
    ("sise > +5%", "unknown metric 'sise'; did you mean size?"),
    ("accuracy < -1%", "unknown metric 'accuracy'")])
def test_bad_rules_are_named(text, said):
    with pytest.raises(ConfigError) as err:
        budgets.parse(text)
    assert str(err.value).startswith(f"--fail-on {text!r}: {said}")
    assert "METRIC OP CHANGE" in str(err.value)


def test_what_rules_measure():
    rule = budgets.parse
    assert rule("size > +5%").broken(1000, 1051) and not rule("size > +5%").broken(1000, 1050)
    assert rule("ops > +0").broken(16, 17) and not rule("ops > +0").broken(16, 16)
    assert rule("top1 < -0.5%").broken(0.90, 0.894) and not rule("top1 < -0.5%").broken(0.9, 0.896)
    assert rule("top1 < -0.5").broken(0.90, 0.894)  # top1 is in points, % or not
    assert rule("latency > +10%").measure(0, 3) == math.inf
    assert rule("size < -10%").broken(100, 80) and not rule("size < -10%").broken(100, 95)
    deltas = {"android": {"size": (1000, 1200), "ops": (10, 10)}, "onnx": {"size": (10, 10)}}
    (broken,) = budgets.check(budgets.parse_all(["size > +5%", "ops > +0", "top1 < -1%"]),
                              deltas)
    assert broken == {"target": "android", "rule": "size > +5%", "reason":
                      "android: size +20.0% (1000 B -> 1.2 KB) breaks `size > +5%`"}


def test_a_bad_rule_stops_the_batch_before_any_work(tmp_path):
    (tmp_path / "models.toml").write_text("this manifest is never read")
    done = cli(tmp_path, "batch", "models.toml", "--fail-on", "size > +5%", "--fail-on",
               "size >> 5")
    assert done.returncode == 6 and done.stdout == ""
    assert done.stderr.strip() == (
        "error: --fail-on 'size >> 5': not a budget rule; write METRIC OP CHANGE, e.g. "
        '"size > +5%", "top1 < -0.5%", "ops > +0" (METRIC: size, ops, top1, latency, max_diff, '
        "mean_diff; OP: > or <; CHANGE: +5%, -0.5%, +0)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models.toml"]
