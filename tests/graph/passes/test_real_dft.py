"""rewrite_for_onnx's real DFT: an RFFT read through Real, Imag or ComplexAbs becomes two MatMuls
with the DFT's matrices, computes the same, and an RFFT read otherwise stays."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.graph.graphdefs import op_counts
from graphfreeze.graph.passes.op_rewrites import rewrite_for_onnx
from graphfreeze.graph.passes.real_dft import dft_matrices
from graphfreeze.graph.session import run_graph_def

WAVE = np.random.default_rng(0).normal(0, 1, (3, 1000)).astype(np.float32)


def _graph(read: str, frame: int = 200, length: int = 256, samples: int | None = 1000):
    """stft frames of `frame` samples, fft_length `length`, read as `read`."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, samples], name="x")
        spec = tf.signal.stft(x, frame_length=frame, frame_step=100, fft_length=length)
        if read == "parts":  # keras.ops.stft, or by hand: |z|^2
            y = tf.math.real(spec) ** 2 + tf.math.imag(spec) ** 2
        elif read == "abs":
            y = tf.abs(spec)
        else:  # the phase: Angle reads the complex value itself
            y = tf.math.angle(spec)
        tf.identity(y, name="y")
    return graph.as_graph_def()


@pytest.mark.parametrize("read,frame,length", [
    ("parts", 256, 256), ("parts", 200, 256), ("abs", 256, 256), ("abs", 300, 256)])
def test_rfft_read_as_numbers_becomes_matmuls_and_matches_tensorflow(read, frame, length):
    graph_def = _graph(read, frame, length)
    before = graph_def.SerializeToString()
    out = rewrite_for_onnx(graph_def, ["y"]).graph_def
    assert graph_def.SerializeToString() == before  # not owned: the caller's graph untouched
    ops = op_counts(out)
    assert not {"RFFT", "Real", "Imag", "ComplexAbs"} & set(ops) and ops["BatchMatMulV2"] == 2
    (want,) = run_graph_def(graph_def, {"x:0": WAVE}, ["y:0"])
    (got,) = run_graph_def(out, {"x:0": WAVE}, ["y:0"])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_an_rfft_read_otherwise_or_of_unknown_length_stays():
    angle = _graph("angle")
    assert rewrite_for_onnx(angle, ["y"]) == (angle, False)  # nothing to rewrite: the same graph
    unknown = _graph("parts", samples=None)  # frames of 256 still: the axis the DFT runs on
    assert "RFFT" not in op_counts(rewrite_for_onnx(unknown, ["y"]).graph_def)


def test_dft_matrices_pad_and_crop_as_rfft_does():
    x = np.random.default_rng(1).normal(0, 1, (4, 10))
    for n, length in ((10, 16), (10, 8), (10, 10)):
        cos, sin = dft_matrices(n, length, np.float64)
        want = np.fft.rfft(x[:, :n], n=length)
        np.testing.assert_allclose(x @ cos, want.real, atol=1e-12)
        np.testing.assert_allclose(x @ sin, want.imag, atol=1e-12)


def test_an_rfft_of_a_whole_clip_stays_an_rfft():
    """A 48,000-point RFFT would take two 4.6 GB matrices: left for the target to judge."""
    graph_def = _graph("abs", frame=48000, length=48000, samples=48000)
    assert "RFFT" in op_counts(rewrite_for_onnx(graph_def, ["y"]).graph_def)
