"""The values an integer input can take, read from what the graph does with it: an input that
indexes a table (token ids into an embedding, segment ids) takes 0 .. rows-1 of the smallest
table it reaches; one that is only compared or cast to bool (a padding mask) takes 0 and 1.
data/domains.py uses these where its own walk finds no table: seeded data (verification,
calibration) is drawn from them, and the user's data checked against them.
"""

from __future__ import annotations

from graphfreeze.graph.graphdefs import consumers, node_of, nodes_by_name

# ops an index passes through unchanged in meaning (Keras' `take` wraps negative indices with
# SelectV2(Less(x, 0), x + rows, x))
_THROUGH = {"Identity", "Cast", "Reshape", "ExpandDims", "Squeeze", "StridedSlice", "Slice",
            "Transpose", "SelectV2", "Select", "AddV2", "Add", "Tile", "BroadcastTo",
            "Minimum", "Maximum", "ConcatV2", "Pack"}
_GATHERS = {"GatherV2": 1, "Gather": 1, "ResourceGather": 1, "GatherNd": 1}
_COMPARE = {"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", "LogicalAnd",
            "LogicalOr", "LogicalNot", "All", "Any"}
_BOOL = 10  # DT_BOOL


def _rows(node, nodes) -> int | None:
    """The first dimension of a gather's (constant) table."""
    ref = node.input[0]
    for _ in range(8):  # through Identity/ReadVariableOp chains to the Const
        table = nodes.get(node_of(ref))
        if table is None:
            return None
        if table.op == "Const":
            dims = table.attr["value"].tensor.tensor_shape.dim
            return int(dims[0].size) if dims else None
        if not table.input:
            return None
        ref = table.input[0]
    return None


def input_ranges(graph_def, inputs: list[str], masks: bool = True) -> dict[str, tuple[int, int]]:
    """{input node: (low, high)} (high exclusive) for the inputs whose use says their range:
    the rows of the table they index, or (with `masks`) 0 and 1 for those only compared."""
    nodes = nodes_by_name(graph_def)
    users = consumers(graph_def)
    found = {}
    for name in inputs:
        rows, mask = _walk(node_of(name), nodes, users)
        if rows:
            found[node_of(name)] = (0, rows)
        elif mask and masks:
            found[node_of(name)] = (0, 2)
    return found


def _walk(start: str, nodes, users) -> tuple[int | None, bool]:
    """(rows of the smallest table `start` indexes, whether it is compared or cast to bool)."""
    rows, mask, seen, front = None, False, {start}, [start]
    while front:
        name = front.pop()
        for user in users.get(name, ()):
            node = nodes.get(user)
            if node is None or user in seen:
                continue
            position = next((i for i, ref in enumerate(node.input) if node_of(ref) == name), -1)
            if node.op in _GATHERS and position == _GATHERS[node.op]:
                table = _rows(node, nodes)
                if table:
                    rows = table if rows is None else min(rows, table)
                continue
            if node.op in _COMPARE or (node.op == "Cast" and node.attr["DstT"].type == _BOOL):
                mask = True
                continue
            if node.op in _THROUGH:
                seen.add(user)
                front.append(user)
    return rows, mask
