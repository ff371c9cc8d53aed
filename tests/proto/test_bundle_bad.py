"""Bad checkpoints and graphs thrown at the TensorFlow-free readers: each is one BundleError or
InputError naming the file (exit 3 from the CLI), never another exception, never more memory than
the file's size calls for."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from graphfreeze.errors import InputError
from graphfreeze.proto.bundle import Bundle, BundleError
from graphfreeze.proto.table import crc32c, masked
from graphfreeze.proto.tf import tensor_bundle_pb2, tensor_shape_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FREEZE = str(Path(sys.executable).with_name("freeze"))


def _varint(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _block(rows) -> bytes:
    """A table block, a restart point at every entry (no shared key prefixes)."""
    out, restarts = b"", []
    for key, value in rows:
        restarts.append(len(out))
        out += _varint(0) + _varint(len(key)) + _varint(len(value)) + key + value
    restarts = restarts or [0]
    return out + b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))


def write_table(rows) -> bytes:
    """The bytes of a TensorFlow table holding `rows` ((key, value), keys sorted), uncompressed."""
    out, handles = b"", []
    for block in (_block(rows), _block([]), None):
        if block is None:  # the index block: the data block's last key -> its handle
            block = _block([(rows[-1][0] if rows else b"", handles[0])])
        handles.append(_varint(len(out)) + _varint(len(block)))
        out += block + b"\x00" + struct.pack("<I", masked(crc32c(block + b"\x00")))
    footer = (handles[1] + handles[2]).ljust(40, b"\x00")
    return out + footer + struct.pack("<Q", 0xDB4775248B80FB57)


def index(entries: dict, shards: int = 1) -> bytes:
    header = tensor_bundle_pb2.BundleHeaderProto(num_shards=shards)
    rows = [(b"", header.SerializeToString())]
    for name in sorted(entries):
        dtype, shape, size, *rest = entries[name]
        entry = tensor_bundle_pb2.BundleEntryProto(
            dtype=dtype, shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in shape]),
            size=size, crc32c=rest[0] if rest else 0)
        rows.append((name.encode(), entry.SerializeToString()))
    return write_table(rows)


def bundle(tmp_path, entries: dict, data: bytes = b"") -> Bundle:
    (tmp_path / "c.index").write_bytes(index(entries))
    (tmp_path / "c.data-00000-of-00001").write_bytes(data)
    return Bundle(str(tmp_path / "c"))


def test_a_written_table_reads_back(tmp_path):
    data = struct.pack("<3f", 1, 2, 3)
    b = bundle(tmp_path, {"v": (1, [3], 12, masked(crc32c(data)))}, data)
    assert b.read("v").tolist() == [1, 2, 3]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_truncated_and_bit_flipped_index(samples, data):
    """A real index cut short or with bits flipped: a BundleError, or (a flip the checksums
    cannot see: the footer's padding) the same entries."""
    original = (samples / "iris" / "model.ckpt-200.index").read_bytes()
    raw = bytearray(original)
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        for _ in range(data.draw(st.integers(1, 4))):
            bit = data.draw(st.integers(0, len(raw) * 8 - 1))
            raw[bit // 8] ^= 1 << bit % 8
    try:
        got = Bundle(str(samples / "iris" / "model.ckpt-200"), bytes(raw)).entries
    except BundleError as err:
        assert "model.ckpt-200.index: " in str(err)
        return
    assert got == Bundle(str(samples / "iris" / "model.ckpt-200"), original).entries


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.binary(max_size=12), st.binary(max_size=40)), max_size=6))
def test_garbage_entries_in_a_sound_table(rows):
    """Tables whose checksums hold but whose entries are random bytes."""
    rows = sorted(dict(rows).items())
    try:
        Bundle("x", write_table(rows))
    except BundleError as err:
        assert str(err).startswith("x.index: ")


def test_data_shard_shorter_than_the_index_says(sample):
    folder = sample("iris")
    data = folder / "model.ckpt-200.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    b = Bundle(str(folder / "model.ckpt-200"))
    names = [n for n, e in b.entries.items() if e.offset + e.size > 100]
    with pytest.raises(BundleError, match=r"data-00000-of-00001: holds \d+ of the \d+ bytes"):
        b.read(names[0])


@pytest.mark.parametrize("kind", ["checkpoint", "saved_model"])
@pytest.mark.parametrize("fault", ["truncated", "missing", "index"])
def test_scan_and_freeze_name_a_broken_checkpoint_file(sample, other, kind, fault):
    """`freeze scan` (no TensorFlow) and a conversion: one line naming the file, exit 3; a whole
    model scans ok."""
    folder = sample("iris") if kind == "checkpoint" else other("tf2_savedmodel")
    model, prefix = (("model.ckpt-200", "model.ckpt-200") if kind == "checkpoint" else
                     (".", "variables/variables"))
    scan = [sys.executable, "-c", "import sys\nfrom graphfreeze_cli.main import main\ntry:\n"
            "    main()\nfinally:\n    assert 'tensorflow' not in sys.modules", "scan", model]
    assert subprocess.run(scan, cwd=folder, capture_output=True).returncode == 0
    data = folder / f"{prefix}.data-00000-of-00001"
    index = folder / f"{prefix}.index"
    if fault == "truncated":
        data.write_bytes(data.read_bytes()[:100])
        named, says = data.name, r": 100 bytes, and .*index places tensors up to byte \d+ in it"
    elif fault == "missing":
        data.unlink()
        named, says = data.name, r": (missing, and .*index places tensors in it|checkpoint " \
            r"data file not found; copy all .data-\* files beside the .index)"  # (as locate says)
    else:
        index.write_bytes(index.read_bytes()[:40])
        named, says = index.name, r": not a readable checkpoint index"
    run = subprocess.run(scan, cwd=folder, capture_output=True, text=True)
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert run.returncode == 3 and len(lines) == 1, run
    assert re.match(rf".*{re.escape(named)}{says}", lines[0]), lines[0]
    args = ["--outputs", "probs"] if kind == "checkpoint" else []
    run = subprocess.run([FREEZE, model, *args, "--no-verify", "-o", "out.pb"], cwd=folder,
                         capture_output=True, text=True)
    assert run.returncode == 3, run.stderr
    assert re.match(rf"error: .*{re.escape(named)}: ", run.stderr) and \
        run.stderr.count("\n") == 1, run.stderr
    assert not (folder / "out.pb").exists()


def test_a_truncated_slice_of_a_partitioned_variable(tmp_path):
    """A partitioned variable's bytes are placed by its slices' rows: checked too, also when
    they end the shard."""
    import tensorflow as tf

    with tf.Graph().as_default():
        tf.compat.v1.get_variable("zz", shape=[8, 4],
                                  partitioner=tf.compat.v1.fixed_size_partitioner(2))
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            prefix = saver.save(session, str(tmp_path / "m.ckpt"))
    Bundle(prefix).check_shards()  # whole
    data = tmp_path / "m.ckpt.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:-8])
    with pytest.raises(BundleError, match=r"data-00000-of-00001: \d+ bytes, and .*m.ckpt.index "
                                          r"places tensors up to byte \d+ in it"):
        Bundle(prefix).check_shards()


def test_a_savedmodel_variables_folder_without_its_index(other, freeze, monkeypatch):
    folder = other("tf2_savedmodel")
    (folder / "variables" / "variables.index").unlink()
    monkeypatch.chdir(folder.parent)
    result = freeze("scan", folder.name)
    assert result.exit_code == 3, result.output
    assert result.output.strip() == (f"{folder.name}/variables/variables.index: missing beside its "
                                     "data files; copy variables/ whole with saved_model.pb")


def test_flipped_tensor_bytes_fail_the_checksum(sample):
    folder = sample("iris")
    data = folder / "model.ckpt-200.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[-1] ^= 4
    data.write_bytes(bytes(raw))
    b = Bundle(str(folder / "model.ckpt-200"))
    last = max(b.entries.values(), key=lambda e: e.offset)
    with pytest.raises(BundleError, match="fails its checksum"):
        b.read(last.name)


def test_dtype_or_shape_disagreeing_with_the_bytes(tmp_path):
    with pytest.raises(BundleError, match=r"tensor 'v' of shape \[3\] \(float32\) needs 12 bytes, "
                                          r"but the index says 8"):
        bundle(tmp_path, {"v": (1, [3], 8)})
    with pytest.raises(BundleError, match="unknown dtype 77"):
        bundle(tmp_path, {"v": (77, [3], 12)})


def test_huge_shapes_take_no_memory(tmp_path):
    """2**40 elements: refused from the index (numbers) or the data's size, allocating nothing."""
    tracemalloc.start()
    try:
        with pytest.raises(BundleError, match="needs 4398046511104 bytes"):
            bundle(tmp_path, {"v": (1, [2**20, 2**20], 16)})
        strings = bundle(tmp_path, {"s": (7, [2**40], 10)}, b"\x01" * 10)
        with pytest.raises(BundleError, match="string tensor 's' of 1099511627776 elements"):
            strings.read("s")
        big = bundle(tmp_path, {"v": (1, [2**38], 2**40)}, b"\x00" * 64)  # sizes agree
        with pytest.raises(BundleError, match="holds 64 of the 1099511627776 bytes"):
            big.read("v")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


@pytest.mark.parametrize("data, match", [
    (b"\xff" * 11 + b"abcd", "broken length prefix"),  # a varint past 64 bits
    (b"\x05" + b"\x00" * 4 + b"ab", "lengths add up to 5 bytes, not the 2"),
    (b"\x02" + b"\x00\x00\x00\x00" + b"ab", "broken length prefix"),  # wrong lengths' checksum
])
def test_string_tensor_with_a_bad_length_prefix(tmp_path, data, match):
    b = bundle(tmp_path, {"s": (7, [1], len(data))}, data)
    with pytest.raises(BundleError, match=match):
        b.read("s")


def test_read_index_names_the_file(sample):
    """What inspect reads: a broken index is one InputError line, exit 3's."""
    from graphfreeze.sources.checkpoint_files import read_index

    folder = sample("iris")
    index_file = folder / "model.ckpt-200.index"
    index_file.write_bytes(index_file.read_bytes()[:-7])
    with pytest.raises(InputError, match=r"model.ckpt-200.index: not a readable checkpoint index "
                                         r"\(not a TensorFlow table.*re-copy the checkpoint$"):
        read_index(str(folder / "model.ckpt-200"))


def _nested_attr(depth: int) -> bytes:
    """An AttrValue whose func's attr holds an AttrValue whose func ... `depth` levels down."""
    def field(number: int, payload: bytes) -> bytes:
        return _varint(number << 3 | 2) + _varint(len(payload)) + payload

    value = field(2, b"x")  # s: "x"
    for _ in range(depth):
        entry = field(1, b"a") + field(2, value)  # map entry: key "a", value AttrValue
        value = field(10, field(1, b"f") + field(2, entry))  # func: NameAttrList(name, attr)
    return value


def test_scan_of_graphs_nested_past_the_recursion_limit(tmp_path):
    """`freeze scan` of a frozen graph nested 5,000 deep: one line, exit 3, no TensorFlow."""
    nested = _nested_attr(5000)
    entry = b"\n\x01v\x12" + _varint(len(nested)) + nested  # attr map entry "v"
    node = b"\n\x01n\x12\x05Const*" + _varint(len(entry)) + entry  # name, op, attr
    (tmp_path / "deep.pb").write_bytes(b"\n" + _varint(len(node)) + node)  # GraphDef.node
    run = subprocess.run([sys.executable, "-c", "import sys\nfrom graphfreeze_cli.main import main\n"
                          "try:\n    main()\nfinally:\n    assert 'tensorflow' not in sys.modules",
                          "scan", "deep.pb"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 3, run.stderr
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deep.pb: not a binary GraphDef"), lines


@pytest.mark.parametrize("content", [b"", write_table([(b"", b"\xff\xff\xff")]),
                                     write_table([(b"a", b"")])[:-3]])
def test_broken_v1_checkpoint(tmp_path, content):
    from graphfreeze.sources.checkpoint_files import read_index

    (tmp_path / "model.ckpt").write_bytes(content)
    with pytest.raises(InputError, match=r"model.ckpt: not a readable V1 checkpoint \(.*re-copy"):
        read_index(str(tmp_path / "model.ckpt"))
