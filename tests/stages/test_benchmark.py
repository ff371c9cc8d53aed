"""--benchmark: each artifact timed in its own runtime at batch 1, the record in the sidecar
(`latency`) and the terminal; off by default; a runtime that cannot time it is a warning."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from graphfreeze.plugins import Format, Session
from graphfreeze.stages import benchmark
from graphfreeze.state import Artifact, State
from graphfreeze.tensors import TensorInfo

KEYS = {"median_ms", "p90_ms", "runs", "warmup", "threads", "cpu", "runtime"}
RUNTIMES = {  # file written by `-o DIR/` -> what the runtime label starts with
    "model.ckpt-200.pb": "TensorFlow",
    "model.ckpt-200.savedmodel": "TensorFlow",
    "model.ckpt-200.tflite": "LiteRT",
    "model.ckpt-200.onnx": "onnxruntime",
}
TARGETS = ["android", "server", "tflite", "onnx"]
if importlib.util.find_spec("openvino") is not None:
    RUNTIMES["model.ckpt-200.xml"] = "OpenVINO"
    TARGETS.append("openvino")


def test_every_format_is_timed_in_its_own_runtime(samples, freeze, tmp_path):
    result = freeze("--ckpt", samples / "cnn_v2", "--outputs", "probs", "--target",
                    ",".join(TARGETS), "-o", f"{tmp_path}/", "--benchmark",
                    "--benchmark-runs", "7", "--benchmark-warmup", "2",
                    "--benchmark-threads", "2")
    assert result.exit_code == 0, result.output
    for file, runtime in RUNTIMES.items():
        lat = json.loads((tmp_path / f"{file}.json").read_text())["latency"]
        assert set(lat) == KEYS, file
        assert lat["runtime"].startswith(runtime), lat
        assert lat["runs"] == 7 and lat["warmup"] == 2 and lat["cpu"]
        assert 0 < lat["median_ms"] <= lat["p90_ms"] < 1000, lat
        if runtime != "TensorFlow" or file.endswith(".pb"):  # eager TF: its pool at start-up
            assert lat["threads"] == 2, lat
    assert "LiteRT" in result.output and "XNNPack" in result.output
    header = next(line for line in result.output.splitlines() if "max |diff|" in line)
    assert "latency" in header
    assert result.output.count("  latency: median ") == len(RUNTIMES)


def test_off_by_default(samples, freeze, tmp_path):
    result = freeze("--ckpt", samples / "iris", "--outputs", "probs", "--target", "tflite",
                    "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.output
    assert "latency" not in json.loads((tmp_path / "model.ckpt-200.tflite.json").read_text())
    assert "latency" not in result.output


@pytest.mark.parametrize("flag,value,message", [
    ("--benchmark-runs", "0", "--benchmark-runs 0: give at least 1"),
    ("--benchmark-threads", "0", "--benchmark-threads 0: give at least 1"),
    ("--benchmark-warmup", "-1", "--benchmark-warmup -1: give 0 or more"),
])
def test_bad_values_are_refused_before_work(samples, freeze, flag, value, message):
    result = freeze("--ckpt", samples / "iris", "--outputs", "probs", "--benchmark", flag, value)
    assert result.exit_code == 6 and message in result.output, result.output


class _Session(Session):
    """A runtime whose bind() is `latency(feeds, threads) -> (label, threads, call)`."""

    def __init__(self, latency, threads):
        self.latency, self.threads = latency, threads

    def bind(self, feeds):
        self.label, self.threads, call = self.latency(feeds, self.threads)
        return call


def _state(latency) -> State:
    fmt = Format("x", None, open=lambda path, inputs, outputs, threads=2, keep=(), loaded=None:
                 _Session(latency, threads))
    artifact = Artifact("m.x", "0", 1, fmt, (TensorInfo("x:0", "float32", (None, 4)),),
                        (TensorInfo("y:0", "float32", (None, 2)),))
    return State(model=None, outputs=(), inputs=(), flags={}, target="t", artifact=artifact)


def test_batch_one_seeded_inputs_timed_after_warmup():
    seen, calls = [], []

    def latency(feeds, threads):
        seen.append((feeds, threads))
        return "fake 1.0", threads, lambda: calls.append(1)

    options = benchmark.BenchmarkOptions(benchmark=True, benchmark_runs=9, benchmark_warmup=3,
                                         benchmark_threads=3)
    out = benchmark.run(_state(latency), options)
    ((feeds, threads),) = seen
    assert feeds["x:0"].shape == (1, 4) and feeds["x:0"].dtype == np.float32 and threads == 3
    assert len(calls) == 12
    lat = out.artifact.facts["latency"]
    assert set(lat) == KEYS and lat["runtime"] == "fake 1.0" and lat["runs"] == 9
    assert benchmark.run(_state(latency), benchmark.BenchmarkOptions()).artifact.facts == {}


def test_an_artifact_it_cannot_time_is_a_warning():
    def latency(feeds, threads):
        raise RuntimeError("no kernel\nmore")

    out = benchmark.run(_state(latency), benchmark.BenchmarkOptions(benchmark=True))
    assert "latency" not in out.artifact.facts
    assert out.notes["warnings"] == ["t: no latency measured: its runtime cannot time it "
                                     "(no kernel)"]


def test_median_and_p90_of_the_timed_calls(monkeypatch):
    """Runs of 1..10 ms (a clock the test drives): median 5.5 ms, p90 9.1 ms; warm-ups untimed."""
    import time

    ticks = iter(t for k in range(1, 11) for t in (float(k), k + k / 1000))
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks))
    calls = []
    record = benchmark.measure(lambda: calls.append(1), runs=10, warmup=2)
    assert len(calls) == 12 and record["runs"] == 10 and record["warmup"] == 2
    assert record["median_ms"] == pytest.approx(5.5) and record["p90_ms"] == pytest.approx(9.1)
