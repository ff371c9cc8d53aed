"""tf2onnx run so that one graph gives one ONNX file: its optimizer and its loop rewriter walk
sets of nodes (ordered by memory address), so what those sets decide is put in node-name order
here; and its optimizer's per-pass copies of the weights are skipped."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def const_protos_synced_once():
    """After each optimizer pass tf2onnx re-copies every node's attributes into its NodeProto,
    weights included, and protobuf keeps the old copies in the message's arena: 100 MB more per
    pass on ResNet50. Passes read a Const's value from the node's attribute dict, never from its
    proto, so Const protos are synced once, by make_model, instead. And duplicated nodes are
    merged into the one with the lowest name, whatever order tf2onnx's sets give them."""
    from tf2onnx.graph import Node
    from tf2onnx.optimizer.merge_duplicated_nodes_optimizer import MergeDuplicatedNodesOptimizer

    original = Node.update_proto

    def update_proto(self, external_tensor_storage=None):
        if self.type != "Const":
            original(self, external_tensor_storage)

    Node.update_proto = update_proto
    merge = MergeDuplicatedNodesOptimizer._len_of_node_output
    # of duplicated nodes, tf2onnx keeps the first in an order sets vary: keep the lowest name
    MergeDuplicatedNodesOptimizer._len_of_node_output = staticmethod(
        lambda node: (len(node.output), tuple(-ord(c) for c in node.name)))
    try:
        yield
    finally:
        Node.update_proto = original
        MergeDuplicatedNodesOptimizer._len_of_node_output = staticmethod(merge)


@contextlib.contextmanager
def loops_in_name_order():
    """tf2onnx's loop rewriter finds a v1 while loop's variables (state, scan and unneeded scan
    ones: the consumers of its LoopCond) and its Enter and Merge nodes as sets, and makes the
    ONNX Loop's carried values in their order: two runs of one graph gave two files. Here it
    gets them in node-name order."""
    from tf2onnx.rewriter.loop_rewriter_base import LoopRewriterBase

    original, parse = LoopRewriterBase.find_subgraph, LoopRewriterBase._parse_loop_variables

    def find_subgraph(input_ids, output_ids, g, merge_as_end=False):
        nodes, enters, merges = original(input_ids, output_ids, g, merge_as_end)
        return (nodes, sorted(enters, key=lambda n: n.name),
                sorted(merges, key=lambda n: n.name))

    def parse_loop_variables(self, context):  # (the consumers of its LoopCond: a set)
        graph, consumers = self.g, self.g.find_output_consumers
        graph.find_output_consumers = lambda name: sorted(consumers(name), key=lambda n: n.name)
        try:
            parse(self, context)
        finally:
            del graph.find_output_consumers  # (the instance's: the class's method again)

    LoopRewriterBase.find_subgraph = staticmethod(find_subgraph)
    LoopRewriterBase._parse_loop_variables = parse_loop_variables
    try:
        yield
    finally:
        LoopRewriterBase.find_subgraph = staticmethod(original)
        LoopRewriterBase._parse_loop_variables = parse
