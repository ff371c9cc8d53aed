"""verify's options, declared once: tolerances (one, or per output; absolute and relative; the
statistic judged), quantized targets' averages, accuracy on labelled data, golden outputs and
quantization to a target. The data options (`--verify-data`, image scaling) are inherited."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from graphfreeze.data.options import DataOptions, number
from graphfreeze.options import OptionValueError, option

STATS = ("max", "mean", "median")


def per_output(spec, name: str) -> tuple[float | None, dict[str, float]]:
    """`1e-4`, `probs=1e-4,boxes=1e-2` or `1e-4,boxes=1e-2`: (for every output, {output: X})."""
    if not isinstance(spec, str):
        return float(spec), {}
    default, own = None, {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        key, sep, value = part.rpartition("=")
        if sep and not key.strip():
            raise OptionValueError(name, repr(spec), "write OUTPUT=X, e.g. probs=1e-4")
        x = number(value.strip(), name)
        if math.isnan(x) or x < 0:
            raise OptionValueError(name, spec, "give a number >= 0 (inf allows any difference)")
        if sep:
            own[key.strip()] = x
        else:
            default = x
    if default is None and not own:
        raise OptionValueError(name, repr(spec), "give a number, or OUTPUT=X per output")
    return default, own


def fraction(spec, name: str) -> float:
    """`0.5%` or `0.005` as a fraction."""
    text = str(spec).strip()
    value = number(text[:-1], name) / 100 if text.endswith("%") else number(text, name)
    if math.isnan(value) or value < 0:
        raise OptionValueError(name, repr(spec), "give a share >= 0, e.g. 0.5% or 0.005")
    return value


@dataclass(frozen=True)
class VerifyOptions(DataOptions):
    tolerance: float | str | None = option(
        None, flag="--tolerance", metavar="X|OUT=X,..",
        help="Error allowed per element (default: the target's); per output: probs=1e-4,boxes=1e-2.")
    rtol: float | str | None = option(
        None, flag="--rtol", metavar="X|OUT=X,..",
        help="Relative error allowed: each element may differ by tolerance + rtol * |original| "
             "(default: 0 with --tolerance, else the target's).")
    # the target's own (TOML): used where --tolerance/--rtol say nothing; target_rtol only
    # where --tolerance says nothing either (float targets scale with the output's magnitude)
    target_tolerance: float = 1e-5
    target_rtol: float = 0.0
    check_stat: str = option(
        "max", flag="--check-stat", metavar="max|mean|median|pNN",
        help="Which statistic of the error --tolerance judges (default max; p99: 99th percentile).")
    # quantized targets' own: the rmse allowed as a share of each float output's range (its
    # values' span with 0 in it, a Softmax's/Sigmoid's [0, 1]); off where --tolerance names it
    target_rmse_range: float | None = None
    mean_tolerance: float | None = None  # mean abs difference allowed (a manifest's, a goal's)
    min_top1: float | None = None  # share of rows whose arg-max agrees (classifier outputs;
    # with a mean tolerance, rows the original decides by less than twice it are ties)
    max_accuracy_drop: float | str | None = option(
        None, flag="--max-accuracy-drop", metavar="X%",
        help="With labelled data: top-1 accuracy the artifact may lose against the original.")
    save_golden: str | None = option(
        None, flag="--save-golden", path=True, output=True, metavar="DIR",
        help="Keep the inputs and the original's outputs in DIR (for --golden later).")
    golden: str | None = option(
        None, flag="--golden", path=True, metavar="DIR",
        help="Verify against golden outputs saved with --save-golden, not the original.")
    quantize_until: float | str | None = option(
        None, flag="--quantize-until", metavar="TOL|X%",
        help="Quantized TFLite: keep the layers TensorFlow's debugger ranks worst in float until "
             "verification passes (TOL: mean |diff|; X%: top-1 accuracy drop, needs labels).")
    quantize_rounds: int = option(10, flag="--quantize-rounds", metavar="N",
                                  help="--quantize-until: at most N conversions (default 10).")
    batch_size: int = 2
    seed: int = 0
    rows_per_run: int = 64  # the user's data runs in chunks of this many rows
    explain: bool = option(False, flag="--explain",
                           help="Also locate where each artifact diverges from the original "
                                "(always done when verification fails) and write it as Model "
                                "Explorer overlays (see `freeze explain`).")

    def __post_init__(self):  # checked with the plan, before any model is loaded
        super().__post_init__()
        for name in ("tolerance", "rtol"):
            value = getattr(self, name)
            if value is None:
                continue
            default, own = per_output(value, name)
            if not own and isinstance(value, str):  # "1e-4" from the command line: a number
                object.__setattr__(self, name, default)
        for name in ("mean_tolerance", "min_top1", "target_tolerance", "target_rtol",
                     "target_rmse_range"):
            value = getattr(self, name)
            if value is not None and (math.isnan(value) or value < 0):
                raise OptionValueError(name, value, "give a number >= 0 (inf allows any "
                                       "difference)")
        stat = self.check_stat
        if stat not in STATS and not (stat[:1] == "p" and _quantile(stat) is not None):
            raise OptionValueError("check_stat", repr(stat), "choose max, mean, median or pNN "
                                   "(a percentile, e.g. p99 or p99.9)")
        if self.max_accuracy_drop is not None:
            fraction(self.max_accuracy_drop, "max_accuracy_drop")
        if self.quantize_until is not None:
            self.quantize_target()
        if self.batch_size < 1 or self.rows_per_run < 1:
            raise OptionValueError("batch_size", self.batch_size, "give at least 1")
        if self.quantize_rounds < 1:
            raise OptionValueError("quantize_rounds", self.quantize_rounds, "give at least 1")
        if self.golden and (self.save_golden or self.verify_data):
            raise OptionValueError("golden", self.golden, "golden outputs bring their own "
                                   "inputs: give --golden alone, without --save-golden or "
                                   "--verify-data")

    def tolerance_for(self, output: str) -> tuple[float, float]:
        """(absolute, relative) error allowed for output `output` ("probs:0"): --tolerance and
        --rtol where they say, else the target's (its rtol only without --tolerance)."""
        atol, rtol = (self._given(name, output) for name in ("tolerance", "rtol"))
        if rtol is None:
            rtol = self.target_rtol if atol is None else 0.0
        return (self.target_tolerance if atol is None else atol), rtol

    def rmse_range_for(self, output: str) -> float | None:
        """The rmse allowed for float output `output` as a share of its range: the target's,
        unless --tolerance says what `output` may differ by (then that alone, as documented)."""
        return None if self._given("tolerance", output) is not None else self.target_rmse_range

    def _given(self, name: str, output: str) -> float | None:
        """What --tolerance/--rtol (`name`) say for `output`, or None."""
        if getattr(self, name) is None:
            return None
        default, own = per_output(getattr(self, name), name)
        return own.get(output, own.get(output.rsplit(":", 1)[0], default))

    def judged(self) -> dict:
        """The tolerances as a verification report records them: --tolerance/--rtol as given,
        else the target's."""
        found = {"tolerance": self.target_tolerance if self.tolerance is None else self.tolerance}
        rtol = self.rtol if self.rtol is not None else \
            (self.target_rtol if self.tolerance is None else 0.0)
        return {**found, "rtol": rtol} if rtol else found

    def named_outputs(self) -> set[str]:
        """The outputs --tolerance/--rtol name (each must exist)."""
        return {k for name in ("tolerance", "rtol") if getattr(self, name) is not None
                for k in per_output(getattr(self, name), name)[1]}

    def accuracy_drop(self) -> float | None:
        return None if self.max_accuracy_drop is None else \
            fraction(self.max_accuracy_drop, "max_accuracy_drop")

    def quantize_target(self) -> VerifyOptions:
        """These options with --quantize-until's goal in place of the target's: X% as the
        accuracy drop allowed, a number as the mean |diff| allowed."""
        spec = self.quantize_until
        if isinstance(spec, str) and spec.strip().endswith("%"):
            return dataclasses.replace(self, quantize_until=None,
                                       max_accuracy_drop=fraction(spec, "quantize_until"))
        value = number(spec, "quantize_until")
        if math.isnan(value) or value < 0:
            raise OptionValueError("quantize_until", repr(spec), "give a mean |diff| >= 0 or an "
                                   "accuracy drop such as 1%")
        return dataclasses.replace(self, quantize_until=None, mean_tolerance=value,
                                   target_rmse_range=None)


def _quantile(stat: str) -> float | None:
    try:
        value = float(stat[1:])
    except ValueError:
        return None
    return value if 0 < value <= 100 else None


def quantile(stat: str) -> float | None:
    """The percentile a `pNN` statistic names (0-100], None for max/mean/median."""
    return _quantile(stat) if stat.startswith("p") else None
