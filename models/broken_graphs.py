"""Structurally valid but broken GraphDefs, each made by breaking one thing in a real graph.

    python models/broken_graphs.py FROZEN_PB OUT_DIR

BREAKS maps a name to (break function, node the error must name, phrase it must hold). A break
function edits a copy of the frozen graph models/other_sources.py writes (x -> dropout ->
MatMul `dense/kernel` -> `add` -> `probs`) in place, in a part `probs` needs (a conversion
validates no more); the recursion breaks first add a real library function made by TensorFlow
(`with_function`). The script writes OUT_DIR/<name>.pb.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def node(graph_def, name: str):
    return next(n for n in graph_def.node if n.name == name)


def with_function(graph_def) -> str:
    """Add `double` (a tf.function's FunctionDef) to the library and a `twice` node calling it on
    `probs`' input through PartitionedCall, which `probs` waits for; returns the function's
    name."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def double(t):
        return t * 2.0

    fdef = double.get_concrete_function().function_def
    graph_def.library.function.add().CopyFrom(fdef)
    call = graph_def.node.add(name="twice", op="PartitionedCall",
                              input=[node(graph_def, "probs").input[0]])
    node(graph_def, "probs").input.append("^twice")  # (a break the outputs need)
    call.attr["Tin"].list.type.append(tf.float32.as_datatype_enum)
    call.attr["Tout"].list.type.append(tf.float32.as_datatype_enum)
    call.attr["f"].func.name = fdef.signature.name
    return fdef.signature.name


def _calls_itself(graph_def) -> None:
    name = with_function(graph_def)
    body = graph_def.library.function[0]
    arg = body.signature.input_arg[0].name
    body.node_def.add(name="again", op=name, input=[arg])


def _mutual_recursion(graph_def) -> None:
    name = with_function(graph_def)
    first = graph_def.library.function[0]
    second = graph_def.library.function.add()
    second.CopyFrom(first)
    second.signature.name = name + "_partner"
    for caller, callee in ((first, second), (second, first)):
        call = caller.node_def.add(name="partner", op="PartitionedCall",
                                   input=[caller.signature.input_arg[0].name])
        call.attr["Tin"].list.type.append(1)
        call.attr["Tout"].list.type.append(1)
        call.attr["f"].func.name = callee.signature.name


def _const(graph_def, name: str, shape: list[int], content: bytes = b"", floats=()) -> None:
    const = graph_def.node.add(name=name, op="Const")
    const.attr["dtype"].type = 1
    tensor = const.attr["value"].tensor
    tensor.dtype = 1
    for dim in shape:
        tensor.tensor_shape.dim.add(size=dim)
    tensor.tensor_content = content
    tensor.float_val.extend(floats)


def _fill(graph_def) -> None:
    """`probs` waiting for Fill([2**40, 4], 1.0): structurally fine, 16 TiB if ever run."""
    dims = graph_def.node.add(name="huge/dims", op="Const")
    dims.attr["dtype"].type = 9  # int64
    dims.attr["value"].tensor.dtype = 9
    dims.attr["value"].tensor.tensor_shape.dim.add(size=2)
    dims.attr["value"].tensor.int64_val.extend([2**40, 4])
    _const(graph_def, "huge/value", [], floats=[1.0])
    fill = graph_def.node.add(name="huge", op="Fill", input=["huge/dims", "huge/value"])
    fill.attr["T"].type = 1
    fill.attr["index_type"].type = 9
    node(graph_def, "probs").input.append("^huge")


def divide_by_zero(graph_def) -> None:
    """`probs` = Softmax(add + Cast(FloorDiv([1], [0]))): made of constants, valid, and fails as
    it runs (not in BREAKS: the validator has nothing to refuse; the run does)."""
    for name, value in (("zero_div/a", 1), ("zero_div/b", 0)):
        const = graph_def.node.add(name=name, op="Const")
        const.attr["dtype"].type = 3  # int32
        const.attr["value"].tensor.dtype = 3
        const.attr["value"].tensor.tensor_shape.dim.add(size=1)
        const.attr["value"].tensor.int_val.append(value)
    graph_def.node.add(name="zero_div", op="FloorDiv", input=["zero_div/a", "zero_div/b"]) \
        .attr["T"].type = 3
    cast = graph_def.node.add(name="zero_div/cast", op="Cast", input=["zero_div"])
    cast.attr["SrcT"].type, cast.attr["DstT"].type = 3, 1
    graph_def.node.add(name="with_div", op="AddV2", input=["add", "zero_div/cast"]).attr["T"].type = 1
    node(graph_def, "probs").input[0] = "with_div"


def _set_input(name: str, index: int, value: str):
    def edit(graph_def) -> None:
        node(graph_def, name).input[index] = value
    return edit


def _set_attr(name: str, attr: str, **value):
    def edit(graph_def) -> None:
        target = node(graph_def, name).attr[attr]
        target.Clear()
        for field, v in value.items():
            if field == "s":
                target.s = v
            elif field == "i":
                target.i = v
            elif field == "type":
                target.type = v
    return edit


BREAKS = {
    # name: (break, node the error names, phrase in the error)
    "cycle": (_set_input("Identity", 0, "Identity_1"), "Identity", "depends on itself"),
    "missing_input": (_set_input("probs", 0, "dense/nowhere"), "probs",
                      "no node 'dense/nowhere'"),
    "output_index": (_set_input("probs", 0, "add:7"), "probs", "has 1 output"),
    "unicode_index": (_set_input("probs", 0, "add:²"), "probs", "no node 'add:²'"),
    "missing_control": (lambda g: node(g, "probs").input.append("^gone"), "probs",
                        "waits for 'gone'"),
    "data_after_control": (lambda g: node(g, "add").input.insert(0, "^x"), "add",
                           "after a control input"),
    "input_count": (lambda g: node(g, "probs").input.append("add"), "probs",
                    "2 data input(s) but op Softmax takes 1"),
    "attr_type": (_set_attr("probs", "T", i=3), "probs", "attr 'T' of the wrong type"),
    "attr_not_allowed": (_set_attr("probs", "T", type=7), "probs", "DT_STRING, not a type"),
    "attr_missing": (lambda g: node(g, "MatMul").attr.pop("T"), "MatMul", "lacks attr 'T'"),
    "attr_unknown": (_set_attr("probs", "colour", s=b"red"), "probs", "attr 'colour'"),
    "const_content": (lambda g: setattr(node(g, "dense/kernel").attr["value"].tensor,
                                        "tensor_content", b"\0" * 40),
                      "dense/kernel", "40 bytes of content but shape [4, 3]"),
    "const_dtype": (lambda g: setattr(node(g, "dense/bias").attr["dtype"], "type", 3),
                    "dense/bias", "holds a DT_FLOAT value but says dtype DT_INT32"),
    "const_splat": (lambda g: _const(g, "zeros", [2**40, 4], floats=[0.0]) or
                    node(g, "probs").input.append("^zeros"), "zeros",
                    "more than any graph file can hold"),
    "unknown_op": (lambda g: setattr(node(g, "probs"), "op", "FancySoftmax"), "probs",
                   "op 'FancySoftmax'"),
    "duplicate_name": (lambda g: g.node.add().CopyFrom(node(g, "probs")), "probs",
                       "is used twice"),
    "too_new": (lambda g: setattr(g.versions, "min_consumer", 10**6), "", "graph version 1000000"),
    "huge_placeholder": (lambda g: setattr(node(g, "x").attr["shape"].shape.dim[0], "size", 2**40),
                         "x", "16.0 TiB"),
    "huge_fill": (_fill, "huge", "makes a tensor of shape [1099511627776, 4]"),
    "calls_itself": (_calls_itself, "", "calls itself"),
    "mutual_recursion": (_mutual_recursion, "", "call each other"),
    "missing_function": (lambda g: setattr(node(g, "twice").attr["f"].func, "name", "nowhere")
                         if with_function(g) else None, "twice", "function 'nowhere'"),
}


def broken(frozen, name: str):
    """A copy of the GraphDef `frozen` with break `name` applied."""
    graph_def = type(frozen)()
    graph_def.CopyFrom(frozen)
    BREAKS[name][0](graph_def)
    return graph_def


def main() -> None:
    from tensorflow.core.framework import graph_pb2

    frozen = graph_pb2.GraphDef()
    with open(sys.argv[1], "rb") as f:
        frozen.ParseFromString(f.read())
    os.makedirs(sys.argv[2], exist_ok=True)
    for name in BREAKS:
        with open(os.path.join(sys.argv[2], f"{name}.pb"), "wb") as f:
            f.write(broken(frozen, name).SerializeToString())


if __name__ == "__main__":
    main()
