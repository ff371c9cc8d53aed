"""Budgets: `--fail-on RULE` and a manifest's `fail_on = [...]`, checked against the baseline.

A rule is `METRIC OP CHANGE`: `size > +5%` (the artifact grew by more than 5 %), `ops > +0` (any
node more), `top1 < -0.5%` (top-1 accuracy fell by more than half a percentage point),
`latency > +10%`, `max_diff > +0`, `mean_diff > +50%`. A CHANGE with `%` is relative to the
baseline's value (top1: always percentage points); without, it is in the metric's own unit
(bytes, nodes, ms, |diff|). A rule that does not parse is a ConfigError naming it, before any
work; a metric one side lacks (no accuracy, no latency) is not checked.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass

from graphfreeze.errors import ConfigError

METRICS = {"size": "bytes", "ops": "nodes", "top1": "pp", "latency": "ms",
           "max_diff": "", "mean_diff": ""}
_RULE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*([<>])\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)"
                   r"\s*(%?)\s*$", re.IGNORECASE)
_HELP = ('write METRIC OP CHANGE, e.g. "size > +5%", "top1 < -0.5%", "ops > +0" (METRIC: '
         f"{', '.join(METRICS)}; OP: > or <; CHANGE: +5%, -0.5%, +0)")


@dataclass(frozen=True)
class Rule:
    metric: str
    op: str  # ">" | "<"
    change: float
    percent: bool
    text: str  # as the user wrote it

    def measure(self, before: float, after: float) -> float:
        """The change this rule judges: relative (in %) or absolute; top1 in points."""
        if self.metric == "top1":
            return (after - before) * 100
        if not self.percent:
            return after - before
        if before == 0:
            return 0.0 if after == 0 else math.copysign(math.inf, after)
        return (after - before) / abs(before) * 100

    def broken(self, before: float, after: float) -> bool:
        got = self.measure(before, after)
        return got > self.change + 1e-12 if self.op == ">" else got < self.change - 1e-12


def parse(text: str, where: str = "--fail-on") -> Rule:
    """One rule; a ConfigError naming it (and the fix) when it does not parse."""
    match = _RULE.match(text) if isinstance(text, str) else None
    if not match:
        raise ConfigError(f"{where} {text!r}: not a budget rule; {_HELP}")
    metric, op, number, percent = match.groups()
    metric = metric.lower()
    if metric not in METRICS:
        close = difflib.get_close_matches(metric, list(METRICS), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ConfigError(f"{where} {text!r}: unknown metric '{metric}'{hint} ({_HELP})")
    return Rule(metric, op, float(number), bool(percent), " ".join(text.split()))


def parse_all(texts, where: str = "--fail-on") -> tuple[Rule, ...]:
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list | tuple):
        raise ConfigError(f"{where}: fail_on must be a list of rules; {_HELP}")
    return tuple(parse(t, where) for t in texts)


def _shown(rule: Rule, got: float) -> str:
    if math.isinf(got):
        return "from 0"
    unit = "pp" if rule.metric == "top1" else "%" if rule.percent else ""
    return f"{got:+.3g}{unit}" if unit != "%" else f"{got:+.1f}%"


def check(rules: tuple[Rule, ...], deltas: dict) -> list[dict]:
    """The budgets broken: deltas is target -> metric -> (before, after) (baseline.job_deltas);
    each broken rule is {"target", "rule", "reason"} with a one-line reason."""
    from graphfreeze.batch.baseline import fmt_value

    broken = []
    for target, metrics in deltas.items():
        for rule in rules:
            pair = metrics.get(rule.metric)
            if pair is None or not rule.broken(*pair):
                continue
            before, after = pair
            got = _shown(rule, rule.measure(before, after))
            broken.append({"target": target, "rule": rule.text, "reason": (
                f"{target}: {rule.metric} {got} ({fmt_value(rule.metric, before)} -> "
                f"{fmt_value(rule.metric, after)}) breaks `{rule.text}`")})
    return broken
