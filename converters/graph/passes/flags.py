"""Training flags (keep_prob, is_training, the Keras learning phase) folded to inference values."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import graph_pb2

import numpy as np
from graphfreeze.graph.consts import make_const


def fold_flags(graph_def, flags: dict[str, object]) -> graph_pb2.GraphDef:
    """Each flag node becomes a Const of its value, or (value None) an Identity of its default."""
    from graphfreeze.proto.dtypes import numpy_dtype

    out = type(graph_def)()
    out.CopyFrom(graph_def)
    for node in out.node:
        if node.name not in flags:
            continue
        value = flags[node.name]
        dtype = node.attr["dtype"].type
        if value is None:
            name, default = node.name, node.input[0]
            node.Clear()
            node.name, node.op = name, "Identity"
            node.input.append(default)
            node.attr["T"].type = dtype
        else:
            np_dtype = numpy_dtype(dtype)
            node.CopyFrom(make_const(node.name, np.asarray(value, dtype=np_dtype)))
    return out

