"""The passes inspect and freeze run grow with the graph, not faster: 8x the nodes of a long
chain (as deep as BERT-large's or a detector's graph is big) costs well under 20x the CPU time.
A scaling check, not a timed one: only the ratio is asserted."""

from __future__ import annotations

import gc
import time

import pytest
from tensorflow.core.framework import graph_pb2

from tests.conftest import _run


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    """models/chains.py's graphs of 200, 2,500 and 20,000 nodes; of 200, 1,000 and 8,000 calls
    (in the graph, and chained in a function's body)."""
    out = tmp_path_factory.mktemp("chains")
    _run("chains.py", out, "--sizes", "200,2500,20000")
    _run("chains.py", out, "--sizes", "200,1000,8000", "--kinds", "calls,nested_calls")
    return out


def chain(folder, n: int, kind: str):
    return graph_pb2.GraphDef.FromString((folder / f"{kind}_{n}.pb").read_bytes())


def cpu_seconds(graph_def) -> float:
    from graphfreeze.graph.passes.builtin import optimize_for_inference, strip_training
    from graphfreeze.sources.describe import inference_graph

    gc.collect()
    start = time.process_time()
    stripped, _ = strip_training(graph_def, ["output", "x"], {})
    optimize_for_inference(stripped, ["output", "x"])
    inference_graph(graph_def, ["output"])
    return time.process_time() - start


@pytest.mark.parametrize("kind,small,big", [("neg_identity", 2_500, 20_000),
                                            ("relu", 2_500, 20_000),
                                            ("calls", 1_000, 8_000),  # (each call inlined)
                                            ("nested_calls", 1_000, 8_000)])
def test_passes_scale_linearly_on_a_long_chain(chains, kind, small, big):
    small, big = chain(chains, small, kind), chain(chains, big, kind)
    cpu_seconds(chain(chains, 200, kind))  # imports and caches warmed
    best = [min(cpu_seconds(g) for _ in range(tries)) for g, tries in ((big, 2), (small, 3))]
    ratio = best[0] / max(best[1], 1e-3)  # (the best of a few: a pause in one run is not growth)
    assert ratio < 20, f"{kind}: 8x the nodes took {ratio:.1f}x the CPU time"
