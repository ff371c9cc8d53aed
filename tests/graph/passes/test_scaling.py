"""The passes inspect and freeze run grow with the graph, not faster: 8x the nodes of a long
chain (as deep as BERT-large's or a detector's graph is big) costs well under 20x the CPU time.
A scaling check, not a timed one: only the ratio is asserted."""

from __future__ import annotations

import gc
import time

import pytest
from tensorflow.core.framework import graph_pb2


def chain(n: int, kind: str):
    """x [1,8] -> n nodes (Neg/Identity alternating, or Relu) -> output, built as protos."""
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    prev = "x"
    for i in range(n):
        op = ("Neg" if i % 2 == 0 else "Identity") if kind == "neg_identity" else "Relu"
        node = graph.node.add(name=f"n{i}", op=op, input=[prev])
        node.attr["T"].type = 1
        prev = node.name
    graph.node.add(name="output", op="Identity", input=[prev]).attr["T"].type = 1
    return graph


def cpu_seconds(graph_def) -> float:
    from graphfreeze.graph.passes.builtin import optimize_for_inference, strip_training
    from graphfreeze.sources.describe import inference_graph

    gc.collect()
    start = time.process_time()
    stripped, _ = strip_training(graph_def, ["output", "x"], {})
    optimize_for_inference(stripped, ["output", "x"])
    inference_graph(graph_def, ["output"])
    return time.process_time() - start


@pytest.mark.parametrize("kind", ["neg_identity", "relu"])
def test_passes_scale_linearly_on_a_long_chain(kind):
    small, big = chain(2_500, kind), chain(20_000, kind)
    cpu_seconds(chain(200, kind))  # imports and caches warmed
    ratio = cpu_seconds(big) / max(cpu_seconds(small), 1e-3)
    assert ratio < 20, f"{kind}: 8x the nodes took {ratio:.1f}x the CPU time"
