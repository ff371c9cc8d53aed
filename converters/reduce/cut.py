"""Subgraphs of a frozen graph: chosen nodes as the outputs, chosen cut points turned into
placeholders of the dtype and shape their tensor has in the whole graph (recorded once, by
TensorFlow's shape inference), everything else cut away."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphfreeze.graph.graphdefs import is_control, node_of, reachable, split_tensor, with_nodes
from graphfreeze.graph.ops import PLACEHOLDER_OPS

FREE = ("Const", *PLACEHOLDER_OPS)  # kept as they are: nothing to reduce in them


@dataclass
class Graph:
    """A frozen graph with what reducing it needs, read once."""

    graph_def: object
    order: list[str]  # node names, topological
    ops: dict[str, str]  # node -> op type
    dtypes: dict[str, int] = field(default_factory=dict)  # node -> its output 0's dtype enum
    shapes: dict[str, object] = field(default_factory=dict)  # node -> TensorShapeProto
    cuttable: set[str] = field(default_factory=set)  # may become a placeholder

    @classmethod
    def of(cls, graph_def) -> Graph:
        from graphfreeze.graph.graphdefs import topo_order
        from graphfreeze.graph.session import import_graph
        from graphfreeze.graph.skeleton import skeleton

        order = [n.name for n in topo_order(graph_def)]
        ops = {n.name: n.op for n in graph_def.node}
        other_outputs = {name for n in graph_def.node for i in n.input if not is_control(i)
                         for name, index in [split_tensor(i)] if index != 0}
        graph = import_graph(skeleton(graph_def))
        dtypes, shapes = {}, {}
        for op in graph.get_operations():
            if op.outputs and op.type not in FREE:
                dtypes[op.name] = op.outputs[0].dtype.base_dtype.as_datatype_enum
                shapes[op.name] = op.outputs[0].shape.as_proto()
        cuttable = {n for n in dtypes if n not in other_outputs and
                    len(graph.get_operation_by_name(n).outputs) == 1}
        return cls(graph_def, order, ops, dtypes, shapes, cuttable)

    def compute(self, outputs) -> list[str]:
        """The nodes (not Const or placeholders) `outputs` need, in graph order."""
        need = reachable(self.graph_def, outputs)
        return [n for n in self.order if n in need and self.ops[n] not in FREE]

    def kept(self, outputs, cuts) -> set[str]:
        return reachable(self.graph_def, outputs, stop_at=set(cuts) - set(outputs))

    def normal(self, outputs, cuts) -> frozenset[str]:
        """`cuts` without those the subgraph does not reach."""
        return frozenset(set(cuts) & self.kept(outputs, cuts) - set(outputs))

    def subgraph(self, outputs, cuts):
        """The GraphDef: what `outputs` need, each node of `cuts` a placeholder."""
        keep = self.kept(outputs, cuts)
        cuts = set(cuts) - set(outputs)
        nodes = []
        for node in self.graph_def.node:
            if node.name not in keep:
                continue
            if node.name in cuts:
                node = type(node)(name=node.name, op="Placeholder")
                node.attr["dtype"].type = self.dtypes[node.name]
                node.attr["shape"].shape.CopyFrom(self.shapes[node.name])
            nodes.append(node)
        return with_nodes(self.graph_def, nodes)

    def data_inputs(self, node: str) -> list[str]:
        """The nodes `node` takes data from (not Const)."""
        if not hasattr(self, "_by_name"):
            self._by_name = {n.name: n for n in self.graph_def.node}
        names = [node_of(i) for i in self._by_name[node].input if not is_control(i)]
        return [n for n in dict.fromkeys(names) if self.ops.get(n) not in FREE]
