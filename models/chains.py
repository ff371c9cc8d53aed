"""Long chains of one op, as deep as BERT-large's or a detector's graph is big: how inspect and
the passes scale (bench/bench_inspect_scale.py, tests/graph/passes/test_scaling.py).

    python models/chains.py OUT_DIR [--sizes 2500,20000] [--kinds neg_identity,relu]

writes OUT_DIR/KIND_N.pb: Placeholder x [1,8] float -> N nodes (Neg/Identity alternating,
Relu, or PartitionedCalls of one library function that negates) -> output, built with protobuf
alone; `nested_calls`: one call of a function whose body is that chain of N calls."""

from __future__ import annotations

import argparse
import os


def chain_graph(n: int, kind: str):
    """The frozen GraphDef of a chain of `n` nodes of `kind` (neg_identity, relu, calls or
    nested_calls)."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef()
    graph.versions.producer = 1882
    x = graph.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    for d in (1, 8):
        x.attr["shape"].shape.dim.add(size=d)
    if kind in ("calls", "nested_calls"):
        negate = graph.library.function.add()
        negate.signature.name = "negate"
        negate.signature.input_arg.add(name="a", type=1)
        negate.signature.output_arg.add(name="y", type=1)
        negate.node_def.add(name="neg", op="Neg", input=["a"]).attr["T"].type = 1
        negate.ret["y"] = "neg:y:0"
    if kind == "nested_calls":  # the chain in a body: its edges are `node:output:0`
        chain = graph.library.function.add()
        chain.signature.name = "chain"
        chain.signature.input_arg.add(name="a", type=1)
        chain.signature.output_arg.add(name="y", type=1)
        prev = "a"
        for i in range(n):
            _call(chain.node_def.add(name=f"c{i}", input=[prev]), "negate")
            prev = f"c{i}:output:0"
        chain.ret["y"] = prev
        _call(graph.node.add(name="n0", input=["x"]), "chain")
        n, prev = 0, "n0"
    else:
        prev = "x"
    for i in range(n):
        op = {"neg_identity": "Identity" if i % 2 else "Neg", "relu": "Relu"}.get(kind)
        node = graph.node.add(name=f"n{i}", op=op, input=[prev])
        if op is None:
            _call(node, "negate")
        else:
            node.attr["T"].type = 1
        prev = node.name
    graph.node.add(name="output", op="Identity", input=[prev]).attr["T"].type = 1
    return graph


def _call(node, function: str) -> None:
    """`node` made a PartitionedCall of `function` (one float in, one out)."""
    node.op = "PartitionedCall"
    node.attr["Tin"].list.type.append(1)
    node.attr["Tout"].list.type.append(1)
    node.attr["f"].func.name = function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--sizes", default="2500,20000")
    parser.add_argument("--kinds", default="neg_identity,relu")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for kind in args.kinds.split(","):
        for n in map(int, args.sizes.split(",")):
            with open(os.path.join(args.out, f"{kind}_{n}.pb"), "wb") as f:
                f.write(chain_graph(n, kind).SerializeToString())


if __name__ == "__main__":
    main()
