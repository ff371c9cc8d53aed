"""TensorList element shapes made static for TFLite.

Keras 3 recurrent layers trace with an unknown batch, so the TensorLists their loops fill are
declared with element shape [-1, units]. TFLite lowers TensorLists to plain tensors only when
that shape is known, so the converter refuses `TensorListReserve` even at batch 1 (and
TFLiteConverter on the same model at batch 1 succeeds only because Keras traced it there).
`static_element_shapes` runs the graph once at the artifact's input shapes, reads the shape each
list's elements actually have, and writes it into the lists' element-shape inputs in the graph
(loop bodies keep theirs: the converter infers them from the lists). The result is meant only
for an artifact with those fixed input shapes; verification compares it with the original.
"""

from __future__ import annotations

from graphfreeze.graph.graphdefs import GraphDef, is_control, split_tensor

CREATE = {"TensorListReserve": 0, "TensorListFromTensor": 1, "EmptyTensorList": 0}
USE = {"TensorListStack": 1, "TensorListGetItem": 2, "TensorListGather": 2,
       "TensorListPopBack": 1}  # op -> index of its element_shape input
LOOPS = ("While", "StatelessWhile")


def static_element_shapes(graph_def, input_shapes: dict[str, list[int]]) -> GraphDef:
    """`graph_def` with open TensorList element shapes set to those the lists hold when the
    inputs (placeholder name -> shape) have `input_shapes`; the input itself if nothing is open
    or the shapes cannot be learnt (then the converter names the ops)."""
    by_name = {n.name: n for n in graph_def.node}
    lists = [n for n in graph_def.node if n.op in CREATE and
             _open(by_name, n.input[CREATE[n.op]])]
    if not lists:
        return graph_def
    shapes = _element_shapes(graph_def, by_name, lists, input_shapes)
    if not shapes:
        return graph_def
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    nodes = {n.name: n for n in out.node}
    users = _users(out)
    for name, shape in shapes.items():
        const = _add_shape_const(out, f"{name}/static_element_shape", shape)
        node = nodes[name]
        node.input[CREATE[node.op]] = const
        for user, position in _list_users(nodes, users, name):
            index = USE.get(nodes[user].op)
            if index is not None and position == 0 and _open(nodes, nodes[user].input[index]):
                nodes[user].input[index] = const
    return out


def _open(by_name: dict, ref: str) -> bool:
    """Whether an element-shape input is a Const with an unknown dim (or rank)."""
    node = by_name.get(split_tensor(ref)[0])
    if node is None or node.op != "Const":
        return False
    from tensorflow.python.framework import tensor_util

    try:
        value = tensor_util.MakeNdarray(node.attr["value"].tensor)
    except Exception:  # noqa: BLE001 -- an odd Const: leave it to the converter
        return False
    return value.ndim == 0 or bool((value < 0).any())


def _users(graph_def) -> dict[str, list[tuple[str, int]]]:
    users: dict[str, list[tuple[str, int]]] = {}
    for node in graph_def.node:
        for position, ref in enumerate(i for i in node.input if not is_control(i)):
            users.setdefault(ref if ":" in ref else f"{ref}:0", []).append((node.name, position))
    return users


def _list_users(nodes: dict, users: dict, name: str):
    """(node, input position) of every main-graph op reading the list `name` makes, following it
    through While loops (a loop's output i carries its input i)."""
    todo, seen = [f"{name}:0"], set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        for user, position in users.get(ref, []):
            if nodes[user].op in LOOPS:
                todo.append(f"{user}:{position}")
            else:
                yield user, position


def _final_handle(nodes: dict, users: dict, name: str) -> str:
    """The tensor holding the list once every loop has filled it."""
    ref = f"{name}:0"
    for _ in range(len(nodes)):
        loop = next(((u, p) for u, p in users.get(ref, []) if nodes[u].op in LOOPS), None)
        if loop is None:
            return ref
        ref = f"{loop[0]}:{loop[1]}"
    return ref


def _element_shapes(graph_def, by_name: dict, lists: list,
                    input_shapes: dict[str, list[int]]) -> dict[str, list[int]]:
    """Node -> the element shape its list holds at `input_shapes` (lists whose elements are not
    all one shape, or that the run cannot stack, are left out)."""
    import numpy as np
    import tensorflow as tf
    from graphfreeze.graph.session import lean_config

    users = _users(graph_def)
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
        fetches = {}
        for node in lists:
            handle = graph.get_tensor_by_name(_final_handle(by_name, users, node.name))
            dtype = tf.as_dtype(node.attr["element_dtype"].type)
            fetches[node.name] = tf.raw_ops.TensorListStack(
                input_handle=handle, element_shape=tf.constant(-1), element_dtype=dtype)
    feeds = {}
    for name, shape in input_shapes.items():
        node = by_name.get(name)
        if node is None or None in shape or any(d < 0 for d in shape):
            return {}
        feeds[f"{name}:0"] = np.zeros(shape, tf.as_dtype(node.attr["dtype"].type).as_numpy_dtype)
    shapes = {}
    with tf.compat.v1.Session(graph=graph, config=lean_config()) as sess:
        for name, tensor in fetches.items():
            try:
                value = sess.run(tensor, feeds)
            except tf.errors.OpError:
                continue  # elements of several shapes, or none set
            if value.ndim >= 1:
                shapes[name] = [int(d) for d in value.shape[1:]]
    return shapes


def _add_shape_const(graph_def, name: str, shape: list[int]) -> str:
    import numpy as np
    from graphfreeze.graph.consts import make_const

    node = graph_def.node.add()
    node.CopyFrom(make_const(name, np.array(shape, np.int32)))
    return name
