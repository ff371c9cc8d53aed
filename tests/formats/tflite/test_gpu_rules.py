"""The GPU checker's rules, one case each from gpu_compatibility.cc (what it accepts next to what
it refuses), on op signatures built by hand: no TensorFlow."""

from __future__ import annotations

from types import SimpleNamespace as Options

import pytest
from graphfreeze.formats.tflite.gpu_checker import check
from graphfreeze.formats.tflite.gpu_rules import Sig, Spec

F = "FLOAT32"


def t(*dims, type=F, const=False):
    return Spec(type, tuple(dims), const)


@pytest.mark.parametrize("sig,reason", [
    # CAST: bool <-> float and float32/int32 both ways only
    (Sig("CAST", (t(4, type="INT32"),), (t(4, type="FLOAT32"),)), None),
    (Sig("CAST", (t(4, type="INT32"),), (t(4, type="INT64"),)),
     "Not supported Cast case. Input type: INT32 and output type: INT64"),
    # SELECT_V2: the condition must be bool or float, the branches float
    (Sig("SELECT_V2", (t(1, 8, type="BOOL"), t(1, 8), t(1, 8)), (t(1, 8),)), None),
    (Sig("SELECT_V2", (t(1, 8, type="INT64"), t(1, 8), t(1, 8)), (t(1, 8),)), "cond INT64, if FLOAT32"),
    # ops the checker has no case for
    (Sig("TOPK_V2", (t(1, 16), t(type="INT32", const=True)), (t(1, 4), t(1, 4))),
     "Not supported op TOPK_V2"),
    # custom ops: four known ones; Flex (TensorFlow kernels) never
    (Sig("MaxUnpooling2D", (t(1, 4, 4, 2), t(1, 4, 4, 2)), (t(1, 8, 8, 2),), custom=True), None),
    (Sig("FlexRaggedGather", (t(4),), (t(4),), custom=True),
     "Not supported custom op FlexRaggedGather"),
    # FULLY_CONNECTED: the input may not be a constant
    (Sig("FULLY_CONNECTED", (t(1, 8), t(4, 8, const=True)), (t(1, 4),), Options()), None),
    (Sig("FULLY_CONNECTED", (t(1, 8, const=True), t(4, 8)), (t(1, 4),), Options()),
     "FullyConnected doesn't support constant input."),
    # DEPTHWISE_CONV_2D: a depth multiplier only on one input channel
    (Sig("DEPTHWISE_CONV_2D", (t(1, 8, 8, 3), t(1, 3, 3, 6, const=True)), (t(1, 8, 8, 6),),
         Options(strideH=1, strideW=1, depthMultiplier=2)),
     "depth_multiplier != 1 && input.c != 1"),
    (Sig("DEPTHWISE_CONV_2D", (t(1, 8, 8, 3), t(1, 3, 3, 3, const=True)), (t(1, 8, 8, 3),),
         Options(strideH=1, strideW=1, depthMultiplier=1)), None),
    # STRIDED_SLICE: no shrink_axis_mask, 3-D or 4-D only
    (Sig("STRIDED_SLICE", (t(1, 4, 4, 2), t(4, type="INT32", const=True),
                           t(4, type="INT32", const=True), t(4, type="INT32", const=True)),
         (t(4, 2),), Options(shrinkAxisMask=3)), "shrink_axis_mask"),
    # MEAN and the reductions: constant int32 axes
    (Sig("MEAN", (t(1, 4, 4, 2), t(2, type="INT32", const=True)), (t(1, 2),)), None),
    (Sig("MEAN", (t(1, 4, 4, 2), t(2, type="INT32")), (t(1, 2),)),
     "Expected 1 const input tensor(s), but node has 0 const input(s)."),
    # SOFTMAX: beta 1 only
    (Sig("SOFTMAX", (t(1, 4),), (t(1, 4),), Options(beta=0.5)), "Softmax.beta != 1"),
    # ADD: any broadcast (offline mode), not incompatible shapes
    (Sig("ADD", (t(1, 4, 4, 3), t(4, 3)), (t(1, 4, 4, 3),)), None),
    (Sig("ADD", (t(1, 4, 4, 3), t(5, 3)), (t(1, 4, 4, 3),)), "Doesn't support broadcasting"),
    # CONV_2D: no SIGN_BIT fused activation
    (Sig("CONV_2D", (t(1, 8, 8, 3), t(4, 3, 3, 3, const=True)), (t(1, 6, 6, 4),),
         Options(strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1,
                 fusedActivationFunction=5)), "kTfLiteActSignBit"),
    # PAD: a 4x2 or 3x2 paddings tensor
    (Sig("PAD", (t(1, 4, 4, 3), t(2, 2, type="INT32", const=True)), (t(1, 6, 6, 3),)),
     "expected 4x2 or 3x2, got 2x2"),
    # GATHER: int32 data refused
    (Sig("GATHER", (t(8, type="INT32"), t(2, type="INT32", const=True)), (t(2, type="INT32"),)),
     "Does not accept INT32 input."),
])
def test_rule(sig, reason):
    got = check(sig)
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got, got
