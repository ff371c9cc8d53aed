"""verify: the original and the artifact on the same inputs (seeded, the user's data, or golden
outputs), judged per output; with --quantize-until, layers kept in float until it passes."""

from graphfreeze.plugins import Stage
from graphfreeze.stages.verify.judge import failure
from graphfreeze.stages.verify.options import VerifyOptions
from graphfreeze.stages.verify.reference import prepare
from graphfreeze.stages.verify.stage import learned_quantization, run


def floor(options: VerifyOptions) -> bool:
    """The original's and the artifact's runs can go to the run's TensorFlow child (not the
    divergence locator's, nor --quantize-until's search)."""
    return not options.explain and options.quantize_until is None


STAGE = Stage("verify", run, "artifact", "artifact", VerifyOptions,
              "run original and artifact on the same inputs (seeded, --verify-data or --golden); "
              "fail over tolerance", prepare=prepare,
              floor=floor, weights_apart=True)  # (the graph's structure only)

__all__ = ["STAGE", "VerifyOptions", "failure", "learned_quantization", "run"]
