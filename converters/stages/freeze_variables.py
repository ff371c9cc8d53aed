"""freeze_variables: the subgraph the outputs need, its variables read and made constants."""

from __future__ import annotations

import dataclasses

from graphfreeze.graph.ops import VARIABLE_OPS
from graphfreeze.plugins import Stage, always


def run(state, _options):
    from graphfreeze.graph.inputs import inference_subgraph
    from graphfreeze.graph.variables import variables_to_constants
    from graphfreeze.graph.weights import Weights, held
    from graphfreeze.process import memory
    from graphfreeze.sources.base import release

    graph_def = inference_subgraph(state.model.graph_def, state.keep, state.inputs)
    read = getattr(state.model, "weights", None)  # a frozen graph's values, held as read
    weights = Weights() if read is None else read.taken(own=state.release_source)
    if state.release_source:  # its memory back to the OS before the weights come in
        release(state.model)
        memory.release()
    dtypes = {n.name: n.attr["dtype"].type for n in graph_def.node if n.op in VARIABLE_OPS}
    state.model.check_variables(sorted(dtypes))
    sizes = []

    def values(names):
        for name, value in state.model.read_variables(names):
            sizes.append(value.nbytes)
            yield name, value

    with held(weights):  # big values apart from the graph (graph/weights.py)
        frozen = variables_to_constants(graph_def, dtypes, values,
                                        getattr(state.model, "values_owned", False))
    weights.keep_only(frozen)
    return dataclasses.replace(state, graph_def=frozen, weights=weights, notes=state.noted(
        variables_frozen=len(dtypes), variable_bytes=sum(sizes)))


STAGE = Stage("freeze_variables", run, consumes="model", produces="graph",
              summary="read the variables the outputs need and turn them into constants",
              floor=always, weights_apart=True)
