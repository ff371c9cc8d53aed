"""Ops an export format lacks, rewritten as the identity they are one step from.

`rewrite_for_onnx` (the onnx target): ONNX has Erf but no Erfc, which Keras' exact GELU
(`0.5 * x * erfc(-x / sqrt(2))`: ConvNeXt, ViT, BERT-style encoders) emits; Erfc(x) is 1 - Erf(x).
In the main graph and in every function body (ops inside a While/If body convert too). And an
RFFT read through Real/Imag/ComplexAbs (audio front ends) as DFT MatMuls: real_dft.py.
"""

from __future__ import annotations

from graphfreeze.graph.function_bodies import map_edges
from graphfreeze.graph.graphdefs import free_name, node_of
from graphfreeze.graph.passes.contract import PassResult

# op -> (the op it becomes, summary): what inspect counts as convertible for ONNX
ONNX_REWRITES = {"Erfc": "1 - Erf(x)"}


def _one(name: str, dtype: int):
    from graphfreeze.graph.consts import make_const
    from tensorflow.python.framework import dtypes

    return make_const(name, 1, dtypes.as_dtype(dtype))


def _rewrite_erfc(nodes, taken: set[str], in_function: bool) -> list:
    """Turn each Erfc node into Sub(1, Erf(x)) under its own name (consumers keep their input);
    returns the new Erf and Const nodes to add beside it."""
    added = []
    for node in nodes:
        if node.op != "Erfc":
            continue
        dtype = node.attr["T"].type
        erf = type(node)(name=free_name(f"{node.name}/erf", taken), op="Erf")
        erf.input.extend(node.input)  # x and any control inputs
        erf.attr["T"].type = dtype
        erf.device = node.device
        one = _one(free_name(f"{node.name}/one", taken), dtype)
        if not in_function:  # in x's while-loop frame, if it has one
            one.input.append("^" + node_of(node.input[0]))
        suffix = (":output:0", ":y:0") if in_function else ("", "")
        node.op = "Sub"
        del node.input[:]
        node.input.extend([one.name + suffix[0], erf.name + suffix[1]])
        added += [erf, one]
    return added


def _renamed_outputs(function, names: set[str]) -> None:
    """In a function body an edge names the op's output arg: Erfc's `y` is Sub's `z`."""
    def fix(edge: str) -> str:
        node, _, rest = edge.partition(":")
        return f"{node}:z:{rest[2:]}" if node in names and rest.startswith("y:") else edge

    map_edges(function, fix)


def rewrite_for_onnx(graph_def, keep: list[str], owned: bool = False):
    """Erfc(x) -> 1 - Erf(x), in the graph and its functions; Real/Imag/ComplexAbs of an RFFT
    -> MatMuls with DFT matrices (main graph). `owned=True`: edit in place."""
    from graphfreeze.graph.passes.real_dft import rewrite_real_dft

    graph_def, dft = rewrite_real_dft(graph_def, keep, owned)
    owned = owned or dft
    functions = [f for f in graph_def.library.function
                 if any(n.op in ONNX_REWRITES for n in f.node_def)]
    if not functions and not any(n.op in ONNX_REWRITES for n in graph_def.node):
        return PassResult(graph_def, dft)
    if not owned:
        copy = type(graph_def)()
        copy.CopyFrom(graph_def)
        graph_def = copy
        functions = [f for f in graph_def.library.function
                     if any(n.op in ONNX_REWRITES for n in f.node_def)]
    taken = {n.name for n in graph_def.node}
    graph_def.node.extend(_rewrite_erfc(graph_def.node, taken, in_function=False))
    for function in functions:
        taken = {n.name for n in function.node_def} | {a.name for a in function.signature.input_arg}
        names = {n.name for n in function.node_def if n.op == "Erfc"}
        function.node_def.extend(_rewrite_erfc(function.node_def, taken, in_function=True))
        _renamed_outputs(function, names)
    return PassResult(graph_def, True)
