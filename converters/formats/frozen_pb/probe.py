"""Intermediate tensors of a frozen GraphDef run in TensorFlow, keyed by the TensorFlow tensor names
they stand for (`dense/Relu:0`): what the divergence locator compares with the original's."""

from __future__ import annotations


def frozen_probe(graph_def):
    """A frozen GraphDef (android, and server's graph): TensorFlow fetches `names` directly."""

    def probe(feeds: dict, names: list[str]) -> dict:
        from graphfreeze.graph.skeleton import run_frozen

        return dict(zip(names, run_frozen(graph_def, feeds, names), strict=True))

    return probe
