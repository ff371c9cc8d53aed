"""drop_neutral_ops: ops that leave their input as it is skipped (as grappler's arithmetic
optimizer does)."""

from __future__ import annotations

from graphfreeze.graph.graphdefs import is_control, nodes_by_name, rewire, split_tensor, tensor_name
from graphfreeze.graph.passes.contract import PassResult
from graphfreeze.graph.passes.pruned import pruned


def drop_neutral_ops(graph_def, keep: list[str], owned: bool = False) -> PassResult:
    """Skip ops that leave their input as it is: BiasAdd of zeros, x + 0 and x - 0 with a
    scalar 0, x * 1 with a scalar 1."""
    import numpy as np
    from graphfreeze.graph.consts import const_value

    by_name = nodes_by_name(graph_def)
    protected = set(keep)
    mapping, drop = {}, set()
    for node in graph_def.node:
        data = [i for i in node.input if not is_control(i)]
        if node.name in protected or len(data) != 2 or len(data) != len(node.input):
            continue
        value = const_value(by_name, data[1])
        if value is None or value.dtype.kind not in "fiu":
            continue
        neutral = (node.op == "BiasAdd" and value.ndim == 1 and not value.any()) or \
            (node.op in ("Add", "AddV2", "Sub") and value.ndim == 0 and value == 0) or \
            (node.op == "Mul" and value.ndim == 0 and value == 1)
        if neutral and np.isfinite(value).all():
            mapping[node.name] = tensor_name(*split_tensor(data[0]))
            drop.add(node.name)
    if not mapping:
        return PassResult(graph_def, False)
    return pruned(rewire(graph_def, mapping, drop=drop, owned=owned), keep, owned=True,
                  changed=True)
