"""freeze_variables: the subgraph the outputs need, its variables read and made constants."""

from __future__ import annotations

import dataclasses

from graphfreeze.errors import InputError
from graphfreeze.registry import Stage
from graphfreeze.sources.base import VARIABLE_OPS


def inference_subgraph(state):
    """The original graph cut to what the outputs need, user-chosen inputs as placeholders."""
    from graphfreeze.graph.graphdefs import extract

    original = state.model.graph_def
    graph_def = extract(original, state.keep, stop_at=[t.node for t in state.inputs])
    if graph_def is original:  # nothing cut away: copy before editing
        graph_def = type(original)()
        graph_def.CopyFrom(original)
    return _inputs_as_placeholders(graph_def, state)


def _inputs_as_placeholders(graph_def, state):
    from graphfreeze.names import PLACEHOLDER_OPS

    cut = [t for t in state.inputs
           if next(n for n in graph_def.node if n.name == t.node).op not in PLACEHOLDER_OPS]
    if not cut:
        return graph_def
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import extract

    graph = tf.Graph()  # the cut tensors' dtypes and shapes, from what computes them
    with graph.as_default():
        tf.graph_util.import_graph_def(extract(state.model.graph_def, [t.node for t in cut]),
                                       name="")
    for ref in cut:
        if ref.index != 0:
            raise InputError(f"input '{ref.name}': only output 0 of a node can become an input; "
                             f"cut the graph at a node with one output")
        tensor = graph.get_tensor_by_name(ref.name)
        node = next(n for n in graph_def.node if n.name == ref.node)
        node.Clear()
        node.name, node.op = ref.node, "Placeholder"
        node.attr["dtype"].type = tensor.dtype.base_dtype.as_datatype_enum
        node.attr["shape"].shape.CopyFrom(tensor.shape.as_proto())
    return graph_def


def run(state, _options):
    from graphfreeze.graph.freeze import variables_to_constants

    graph_def = inference_subgraph(state)
    dtypes = {n.name: n.attr["dtype"].type for n in graph_def.node if n.op in VARIABLE_OPS}
    state.model.check_variables(sorted(dtypes))
    sizes = []

    def read(names):
        for name, value in state.model.read_variables(names):
            sizes.append(value.nbytes)
            yield name, value

    frozen = variables_to_constants(graph_def, dtypes, read)
    return dataclasses.replace(state, graph_def=frozen, notes=state.noted(
        variables_frozen=len(dtypes), variable_bytes=sum(sizes)))


STAGE = Stage("freeze_variables", run, consumes="model", produces="graph",
              summary="read the variables the outputs need and turn them into constants")
