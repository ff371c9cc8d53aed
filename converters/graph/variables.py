"""Variables to constants: TensorFlow's own converter, fed from a checkpoint instead of a session.

`convert_to_constants` knows every way a variable reaches its readers (ref and resource variables,
reads inside `If`/`While`/call function bodies, resource `Switch`/`Merge`); we reuse it, giving it
values read straight from the checkpoint so no session has to restore every variable first.
Where a variable reaches only plain readers (ReadVariableOp, Identity, Switch, Enter, ...), its
edits are made without TensorFlow (`variable_readers`, the same graph byte for byte); then what
the converter leaves undone (a gather inside a function, an assign) is finished
(`variable_readers.finish_readers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorflow.core.framework import graph_pb2

from collections.abc import Callable, Iterable

import numpy as np
from graphfreeze.graph.assign_reads import refuse_assign_then_read
from graphfreeze.graph.consts import set_value
from graphfreeze.graph.graphdefs import copied
from graphfreeze.graph.variable_readers import finish_readers, frozen_names, rewired

# Ops that only carry a reference through; with a constant behind them they take plain tensors.
_REF_OPS = {"RefSwitch": "Switch", "RefIdentity": "Identity", "RefEnter": "Enter",
            "RefExit": "Exit", "RefMerge": "Merge", "RefNextIteration": "NextIteration",
            "RefSelect": "Select"}


def _checkpoint_values(graph_def, values):
    """TensorFlow's converter data with `values` as the variables' values."""
    from tensorflow.python.framework import convert_to_constants as c2c

    data = c2c._ConverterData(graph_def)  # noqa: SLF001 -- see module docstring
    for name, value in values.items():
        node = data.node_defs[name]
        data._tensor_data[name] = c2c._TensorData(  # noqa: SLF001
            numpy=value, dtype=node.attr["dtype"].type, index=None)
    return data


def variables_to_constants(graph_def, dtypes: dict[str, int],
                           read: Callable[[list[str]], Iterable[tuple[str, np.ndarray]]],
                           own: bool = False) -> graph_pb2.GraphDef:
    """Replace each variable node named in `dtypes` by a Const holding its value.

    `graph_def` is owned: edited in place, and returned itself when it has no variable. The
    graph is rewired first (without TensorFlow where `variable_readers` can: the same edits);
    then the constants get their real values from `read(names)`, which yields (name, value) a
    few at a time, so little is held twice; `own`: nothing else holds those arrays (a pass may
    edit them in place, graph/weights.py).
    """
    for node in graph_def.node:
        if node.op == "Variable":  # the pre-V2 op has the same attrs
            node.op = "VariableV2"
    refuse_assign_then_read(graph_def)
    frozen = graph_def if not dtypes else \
        rewired(copied(graph_def), dtypes) or _tensorflow_rewired(graph_def, dtypes)
    finish_readers(frozen)  # gathers in loop bodies, assigns: what the converter leaves
    consts = {}
    for node in frozen.node:
        if node.op in _REF_OPS:
            node.op = _REF_OPS[node.op]
        elif node.name in dtypes and node.op == "Const":
            consts[node.name] = node
    for name, value in read(sorted(consts)):
        set_value(consts[name], value, own)  # held apart if big and Weights are held
        del value
    return frozen


def _tensorflow_rewired(prepared, dtypes: dict[str, int]):
    """TensorFlow's converter on `prepared` (owned), with scalar stand-ins as values."""
    from tensorflow.python.framework import convert_to_constants as c2c
    from tensorflow.python.framework import dtypes as dtypes_lib

    stand_ins = {name: np.zeros((), dtypes_lib.as_dtype(dtype).as_numpy_dtype)
                 for name, dtype in dtypes.items()}
    data = _checkpoint_values(prepared, stand_ins)
    graph = c2c._GraphDef(data.graph_def)  # noqa: SLF001 -- _replace_variables_by_constants,
    graph._converted_function_names = frozen_names(graph.functions)  # noqa: SLF001 -- named
    for name, tensor in data.tensor_data.items():  # as ours, not by a process-wide counter
        graph.nodes[name].convert_variable_to_constant(None, tensor)
    return graph.converted_self().graph_def
