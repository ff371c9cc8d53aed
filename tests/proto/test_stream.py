"""proto/stream: a binary proto file merged a few MB at a time is the message one parse gives;
a broken file is a DecodeError, as it is to one parse; the peak stays near the parse's size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from graphfreeze.proto.stream import GRAPH_SPLIT, META_GRAPH_SPLIT, merge_file
from graphfreeze.proto.tf import graph_pb2, meta_graph_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _both(path, cls, split, chunk):
    whole = cls.FromString(path.read_bytes())
    return whole, merge_file(cls(), str(path), split, chunk)


@pytest.mark.parametrize("chunk", [1, 7, 1000, 16 << 20])
def test_the_message_one_parse_gives(samples, other_samples, chunk):
    """A training meta graph (its graph_def and function library read field by field) and a
    frozen graph: the same message and the same bytes, whatever the chunk size."""
    for path, cls, split in [
            (samples / "cnn_v2" / "model.ckpt-200.meta", meta_graph_pb2.MetaGraphDef,
             META_GRAPH_SPLIT),
            (other_samples / "frozen.pb", graph_pb2.GraphDef, GRAPH_SPLIT)]:
        whole, streamed = _both(path, cls, split, chunk)
        assert streamed == whole and streamed.SerializeToString() == whole.SerializeToString()


@pytest.mark.parametrize("chunk", [7, 1000, 4 << 20])
def test_big_fields_between_runs_of_small_ones(tmp_path, chunk):
    """Small nodes read in runs from the buffer, a weight of its own buffer between them (its
    read empties the buffer: the run before it is kept), at every chunk size."""
    graph = graph_pb2.GraphDef()
    for i in range(300):
        node = graph.node.add(name=f"n{i}", op="Identity", input=[f"n{i - 1}"])
        if i % 100 == 50:
            node.op = "Const"
            node.attr["value"].tensor.tensor_content = np.full(1_100_000 + i, i, np.uint8).tobytes()
    path = tmp_path / "mixed.pb"
    path.write_bytes(graph.SerializeToString())
    whole, streamed = _both(path, graph_pb2.GraphDef, GRAPH_SPLIT, chunk)
    assert streamed == whole and len(whole.node) == 300


def test_every_truncation_is_a_decode_error_or_a_field_boundary(other_samples, tmp_path):
    """Cut at every length: a DecodeError, or (cut between fields) what one parse gives."""
    data = (other_samples / "frozen.pb").read_bytes()
    path = tmp_path / "cut.pb"
    for end in range(len(data)):
        path.write_bytes(data[:end])
        try:
            whole = graph_pb2.GraphDef.FromString(data[:end])
        except DecodeError:
            whole = None
        try:
            streamed = merge_file(graph_pb2.GraphDef(), str(path), GRAPH_SPLIT, 64)
        except DecodeError:
            streamed = None
        assert streamed == whole, end


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                      max_size=4))
def test_flipped_bytes_read_as_one_parse_reads_them(other_samples, tmp_path, flips):
    """Any byte changed: a DecodeError, never another error; read only if one parse reads it,
    then the same message (groups, which no graph has, are refused where a parse skips them)."""
    data = bytearray((other_samples / "frozen.pb").read_bytes())
    for at, mask in flips:
        data[at % len(data)] ^= mask
    path = tmp_path / "flipped.pb"
    path.write_bytes(bytes(data))
    try:
        streamed = merge_file(graph_pb2.GraphDef(), str(path), GRAPH_SPLIT, 64)
    except DecodeError:
        return
    assert streamed == graph_pb2.GraphDef.FromString(bytes(data))


_PEAK = ("import sys\n"
         "from graphfreeze.proto.stream import GRAPH_SPLIT, merge_file\n"
         "from graphfreeze.proto.tf import graph_pb2\n"
         "from tests.peak_rss import growth_kib\n"
         "with growth_kib() as grown:\n"
         "    graph = merge_file(graph_pb2.GraphDef(), sys.argv[1], GRAPH_SPLIT)\n"
         "print(len(graph.node), grown())\n")


def test_the_peak_is_the_parse_not_the_bytes_and_the_parse(tmp_path):
    """64 MB of weights in 8 Consts, parsed in a fresh process: merged in chunks, the parse adds
    ~1.15x the file's size (one parse of its bytes holds both: 2x)."""
    graph = graph_pb2.GraphDef()
    for i in range(8):
        node = graph.node.add(name=f"w{i}", op="Const")
        node.attr["dtype"].type = 1
        tensor = node.attr["value"].tensor
        tensor.dtype = 1
        tensor.tensor_shape.dim.add(size=2 << 20)
        tensor.tensor_content = np.full(2 << 20, i, np.float32).tobytes()
    path = tmp_path / "big.pb"
    path.write_bytes(graph.SerializeToString())
    done = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True,
                          text=True, cwd=Path(__file__).parents[2], check=True)
    nodes, grown_kib = map(int, done.stdout.split())
    assert nodes == 8 and grown_kib * 1024 < 1.3 * path.stat().st_size, grown_kib


def test_a_corrupt_length_is_a_decode_error_not_an_allocation(tmp_path):
    """A node claiming 2**62 bytes (a 10-byte file), and a weight cut short: DecodeError, before
    any buffer of the claimed size (it was a MemoryError: an internal error)."""
    path = tmp_path / "huge.pb"
    path.write_bytes(bytes.fromhex("0affffffffffffffff3f"))
    with pytest.raises(DecodeError):
        merge_file(graph_pb2.GraphDef(), str(path), GRAPH_SPLIT)
    graph = graph_pb2.GraphDef()
    node = graph.node.add(name="w", op="Const")
    node.attr["value"].tensor.tensor_content = bytes(3 << 20)
    data = graph.SerializeToString()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(DecodeError):
        merge_file(graph_pb2.GraphDef(), str(path), GRAPH_SPLIT)


def test_a_pipe_is_read_whole(other_samples, tmp_path):
    """No size to read up to: a named pipe (or /dev/stdin) is parsed whole, not as empty."""
    import os
    import threading

    from graphfreeze.io.storage import read_proto

    data = (other_samples / "frozen.pb").read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    try:
        writer = threading.Thread(target=lambda: fifo.write_bytes(data))
        writer.start()
        graph = read_proto(str(fifo), graph_pb2.GraphDef(), GRAPH_SPLIT)
        writer.join()
    finally:
        fifo.unlink()
    assert graph == graph_pb2.GraphDef.FromString(data)
