"""graph/held_values: a frozen graph's big values taken out of its nodes as the file is read.
What is held and put back is the graph one parse gives, byte for byte as the export writes it;
anything the reader does not fully understand is left for validation, as if never offered."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from graphfreeze.errors import InputError
from graphfreeze.graph.checks.validate import check_graph_def
from graphfreeze.graph.consts import WEIGHT_ATTR
from graphfreeze.graph.held_values import holder
from graphfreeze.graph.serialize import serialize_chunks
from graphfreeze.graph.weights import Weights, attach, held, is_held
from graphfreeze.proto.stream import GRAPH_SPLIT, merge_file
from graphfreeze.proto.tf import graph_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RNG = np.random.default_rng(0)


def _const(graph, name: str, value: np.ndarray, enum: int, **extra):
    node = graph.node.add(name=name, op="Const")
    node.attr["dtype"].type = enum
    tensor = node.attr["value"].tensor
    tensor.dtype = enum
    for dim in value.shape:
        tensor.tensor_shape.dim.add().size = dim
    tensor.tensor_content = value.tobytes()
    for setting in extra.values():
        setting(node)
    return node


def _graph() -> graph_pb2.GraphDef:
    """Big Consts as TensorFlow writes them, and big nodes the reader must leave alone."""
    graph = graph_pb2.GraphDef()
    graph.versions.producer = 1882
    graph.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    weights = RNG.normal(size=(64, 512)).astype(np.float32)  # 128 KB
    _const(graph, "w", weights, 1)
    _const(graph, "q", RNG.integers(-128, 127, (300, 300)).astype(np.int8), 6)
    _const(graph, "versioned", weights, 1,
           v=lambda n: setattr(n.attr["value"].tensor, "version_number", 3))
    _const(graph, "later_key", weights, 1, v=lambda n: n.attr["zeta"].CopyFrom(n.attr["dtype"]))
    _const(graph, "small", np.arange(10, dtype=np.float32), 1)
    _const(graph, "two_forms", weights, 1,
           v=lambda n: n.attr["value"].tensor.float_val.extend([1.0]))
    _const(graph, "short", weights[:, :-1], 1,
           v=lambda n: n.attr["value"].tensor.tensor_shape.dim[1].__setattr__("size", 512))
    _const(graph, "says_int", weights, 1, v=lambda n: setattr(n.attr["dtype"], "type", 3))
    _const(graph, "strings", np.zeros((64, 512), np.float32), 1,
           v=lambda n: setattr(n, "op", "NotAConst"))
    _const(graph, "unknown_field", weights, 1,  # (field 99: a newer TensorFlow's, say)
           v=lambda n: n.MergeFromString(b"\x98\x06\x01"))
    big = graph.node.add(name="big_attr", op="Identity", input=["x"])
    big.attr["note"].s = b"n" * 100_000
    graph.node.add(name="mm", op="MatMul", input=["x", "w"]).attr["T"].type = 1
    return graph


HELD = {"w", "q", "versioned", "later_key"}


def _read(path, weights=None):
    hold = None if weights is None else holder(weights)
    return merge_file(graph_pb2.GraphDef(), str(path), GRAPH_SPLIT, hold=hold)


def test_held_values_put_back_are_the_graph_one_parse_gives(tmp_path):
    path = tmp_path / "g.pb"
    path.write_bytes(_graph().SerializeToString())
    whole = graph_pb2.GraphDef.FromString(path.read_bytes())
    weights = Weights()
    graph = _read(path, weights)
    assert {n.name for n in graph.node if is_held(n)} == HELD
    assert len(weights.arrays) == len(HELD)
    for node in graph.node:
        if is_held(node):  # the file's tensor, but for its content
            assert not node.attr["value"].tensor.tensor_content
            value = weights.value(node)
            assert value.tobytes() == next(n for n in whole.node if n.name == node.name) \
                .attr["value"].tensor.tensor_content
            assert weights.editable(node) is not None  # its own buffer: a pass may edit it
    written = b"".join(bytes(c) for c in serialize_chunks(graph, weights=weights))
    assert written == whole.SerializeToString(deterministic=True)
    attach(graph, weights)
    assert graph == whole


def test_what_is_not_held_is_validated_as_before(tmp_path):
    """The Consts left in the graph are refused by validation with the lines one parse gets;
    the held ones pass it where the run holds them, and a file's own attr of that name does
    not (whatever key it names)."""
    path = tmp_path / "g.pb"
    for bad in ("short", "says_int"):  # (two_forms is valid: TensorFlow reads the content)
        graph = _graph()
        keep = [n for n in graph.node if n.name in {"x", "w", "mm", bad}]
        del graph.node[:]
        graph.node.extend(keep)
        path.write_bytes(graph.SerializeToString())
        with pytest.raises(InputError) as parsed:
            check_graph_def(graph_pb2.GraphDef.FromString(path.read_bytes()), "g.pb")
        weights = Weights()
        held_graph = _read(path, weights)
        with held(weights), pytest.raises(InputError) as read:
            check_graph_def(held_graph, "g.pb")
        assert str(read.value) == str(parsed.value) and bad in str(read.value)
    graph = _graph()
    path.write_bytes(graph.SerializeToString())
    weights = Weights()
    held_graph = _read(path, weights)
    valid = [n for n in held_graph.node if n.name in {"x", "w", "q", "mm"}]
    del held_graph.node[:]
    held_graph.node.extend(valid)
    with held(weights):
        check_graph_def(held_graph, "g.pb")
    forged = held_graph.node.add()
    forged.CopyFrom(next(n for n in held_graph.node if n.name == "w"))
    forged.name = "forged"
    key = next(iter(weights.arrays))
    forged.attr[WEIGHT_ATTR].s = key[:-1].encode() + b"x"
    with held(weights), pytest.raises(InputError, match=f"'forged' \\(Const\\) has attr '{WEIGHT_ATTR}'"):
        check_graph_def(held_graph, "g.pb")


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                      max_size=3))
def test_flipped_bytes_hold_only_what_one_parse_reads(tmp_path, flips):
    """Any byte changed: a DecodeError, or the message one parse gives once the held values
    are put back (a flip inside a node the reader takes apart included)."""
    data = bytearray(_graph().SerializeToString())
    for at, xor in flips:
        data[at % len(data)] ^= xor
    path = tmp_path / "flipped.pb"
    path.write_bytes(bytes(data))
    weights = Weights()
    try:
        graph = _read(path, weights)
    except DecodeError:
        return
    attach(graph, weights)
    assert graph == graph_pb2.GraphDef.FromString(bytes(data))
