"""TensorFlow's V2 checkpoint (TensorBundle) without TensorFlow: the `.index` table (a
BundleHeaderProto under the empty key, a BundleEntryProto per tensor) and the tensors' bytes in
the `.data-NNNNN-of-NNNNN` shards, read and checked as TensorFlow's BundleReader does (sizes,
checksums, string length prefixes). A damaged file is a `BundleError` naming it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from graphfreeze.proto import dtypes
from graphfreeze.proto.table import TableError, crc32c, masked, read_table, varint

MAX_INDEX_BYTES = 1 << 30


class BundleError(ValueError):
    """A checkpoint file is not what its index says; the message names the file."""


@dataclass(frozen=True)
class Entry:
    """One tensor of the checkpoint, as its index records it."""

    name: str
    dtype: int
    shape: tuple[int, ...]
    shard: int
    offset: int
    size: int
    crc32c: int
    sliced: bool  # a partitioned variable: its bytes are under its slices' keys

    @property
    def count(self) -> int:
        total = 1
        for d in self.shape:
            total *= d
        return total


class Bundle:
    """The checkpoint at `prefix`: its entries (`entries`, name -> Entry) and `read(name)`."""

    def __init__(self, prefix: str, index: bytes | None = None):
        from graphfreeze.io import storage
        from graphfreeze.proto.tf import tensor_bundle_pb2

        self.prefix, self.index = prefix, prefix + ".index"
        if index is None:
            if storage.exists(self.index) and storage.size(self.index) > MAX_INDEX_BYTES:
                raise BundleError(f"{self.index}: {storage.size(self.index)} bytes, more than any "
                                  "checkpoint index holds")
            index = storage.read_bytes(self.index)
        try:
            rows = read_table(index)
        except TableError as err:
            raise BundleError(f"{self.index}: not a readable checkpoint index ({err})") from err
        if not rows or rows[0][0] != b"":
            raise BundleError(f"{self.index}: no checkpoint header (not a V2 checkpoint index)")
        header = self._parse(tensor_bundle_pb2.BundleHeaderProto, rows[0][1], "header")
        if header.endianness != header.LITTLE:
            raise BundleError(f"{self.index}: a big-endian checkpoint; re-save it on this machine")
        self.num_shards = header.num_shards
        self.entries: dict[str, Entry] = {}
        self._slices = []  # the rows of partitioned variables' slices: where their bytes are
        for key, value in rows[1:]:
            if key[:1] == b"\x00":  # a slice of a partitioned variable (TensorFlow skips these too)
                self._slices.append((key, value))
                continue
            entry = self._parse(tensor_bundle_pb2.BundleEntryProto, value, key)
            self.entries[key.decode("utf-8", "replace")] = self._entry(key, entry)

    def _parse(self, cls, value, key):
        from google.protobuf.message import DecodeError

        try:
            return cls.FromString(bytes(value))
        except DecodeError as err:
            raise BundleError(f"{self.index}: entry {key!r} does not parse ({err})") from err

    def _entry(self, key: bytes, e) -> Entry:
        name = key.decode("utf-8", "replace")
        shape = tuple(d.size for d in e.shape.dim)
        if e.shape.unknown_rank or any(d < 0 for d in shape):
            raise BundleError(f"{self.index}: tensor '{name}' has an unknown or negative shape")
        if e.dtype not in dtypes.DTYPES:
            raise BundleError(f"{self.index}: tensor '{name}' has an unknown dtype {e.dtype}")
        if not e.slices and not 0 <= e.shard_id < max(self.num_shards, 1):
            raise BundleError(f"{self.index}: tensor '{name}' is in shard {e.shard_id}, but the "
                              f"checkpoint has {self.num_shards}")
        entry = Entry(name, e.dtype, shape, e.shard_id, e.offset, e.size, e.crc32c,
                      bool(e.slices))
        itemsize = dtypes.itemsize(e.dtype)
        if itemsize and not entry.sliced and entry.count * itemsize != e.size:
            raise BundleError(f"{self.index}: tensor '{name}' of shape {list(shape)} "
                              f"({dtypes.name(e.dtype)}) needs {entry.count * itemsize} bytes, "
                              f"but the index says {e.size}")
        return entry

    def shard_file(self, shard: int) -> str:
        return f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}"

    def check_shards(self) -> None:
        """Each data shard is there and holds the bytes the index places in it, partitioned
        variables' slices too (no tensor read)."""
        from graphfreeze.io import storage
        from graphfreeze.proto.tf import tensor_bundle_pb2

        placed = [(e.name, e.shard, e.offset + e.size) for e in self.entries.values()
                  if not e.sliced]
        for key, value in self._slices:
            e = self._parse(tensor_bundle_pb2.BundleEntryProto, value, key)
            placed.append((repr(key), e.shard_id, e.offset + e.size))
        ends: dict[int, int] = {}
        for name, shard, end in placed:
            if not 0 <= shard < max(self.num_shards, 1):
                raise BundleError(f"{self.index}: tensor {name} is in shard {shard}, but the "
                                  f"checkpoint has {self.num_shards}")
            ends[shard] = max(ends.get(shard, 0), end)
        for shard, end in sorted(ends.items()):
            path = self.shard_file(shard)
            if not storage.exists(path):
                raise BundleError(f"{path}: missing, and {self.index} places tensors in it")
            if (size := storage.size(path)) < end:
                raise BundleError(f"{path}: {size} bytes, and {self.index} places tensors up to "
                                  f"byte {end} in it")

    def raw(self, name: str) -> bytes | bytearray:
        """The bytes of tensor `name` as stored (strings: with their length prefixes)."""
        entry = self.entries[name]
        if entry.sliced:
            raise BundleError(f"{self.index}: '{name}' is a partitioned variable; graphfreeze "
                              "reads those with TensorFlow")
        path = self.shard_file(entry.shard)
        data = _read_range(path, entry.offset, entry.size)
        if len(data) != entry.size:
            raise BundleError(f"{path}: holds {len(data)} of the {entry.size} bytes of tensor "
                              f"'{name}' at offset {entry.offset} (truncated?); re-copy the "
                              "checkpoint")
        return data

    def _verify(self, entry: Entry, crc: int) -> None:
        if masked(crc) != entry.crc32c:
            raise BundleError(f"{self.shard_file(entry.shard)}: tensor '{entry.name}' fails its "
                              "checksum (corrupt data); re-copy the checkpoint")

    def read(self, name: str):
        """Tensor `name` as a numpy array (strings: an object array of bytes)."""
        import numpy as np

        entry = self.entries[name]
        data = self.raw(name)
        if entry.dtype == dtypes.STRING:  # (its elements as bytes)
            values, crc = _strings(bytes(data), entry, self.shard_file(entry.shard))
            self._verify(entry, crc)
            return values
        self._verify(entry, crc32c(data))
        dtype = dtypes.numpy_dtype(entry.dtype)
        if dtype is None:
            raise BundleError(f"{self.index}: tensor '{name}' is a {dtypes.name(entry.dtype)}, "
                              "which has no numpy value")
        return np.frombuffer(data, dtype=dtype).reshape(entry.shape)


def _strings(data: bytes, entry: Entry, path: str):
    """A string tensor (varint64 lengths, their checksum, the bytes: WriteStringTensor) and the
    crc32c TensorFlow stored for it, unmasked."""
    import numpy as np

    count, pos, lengths = entry.count, 0, []
    if count > len(data):  # every element takes a length byte at least
        raise BundleError(f"{path}: string tensor '{entry.name}' of {count} elements in "
                          f"{len(data)} bytes; the checkpoint is corrupt")
    try:
        for _ in range(count):
            length, pos = varint(data, pos)
            lengths.append(length)
    except TableError as err:
        raise BundleError(f"{path}: string tensor '{entry.name}' has a broken length prefix") \
            from err
    if pos + 4 + sum(lengths) != len(data):
        raise BundleError(f"{path}: string tensor '{entry.name}': its lengths add up to "
                          f"{sum(lengths)} bytes, not the {len(data) - pos - 4} it holds")
    # The checksum covers each length (a uint32, or a uint64 past 4 GiB), the lengths'
    # checksum as stored (masked), then the strings.
    crc = crc32c(b"".join(n.to_bytes(4 if n <= 0xFFFFFFFF else 8, "little") for n in lengths))
    if masked(crc) != int.from_bytes(data[pos:pos + 4], "little"):
        raise BundleError(f"{path}: string tensor '{entry.name}' has a broken length prefix "
                          "(its checksum fails); re-copy the checkpoint")
    crc = crc32c(data[pos:], crc)
    pos += 4
    out = np.empty(count, dtype=object)
    for i, length in enumerate(lengths):
        out[i] = data[pos:pos + length]
        pos += length
    return out.reshape(entry.shape), crc


def _read_range(path: str, offset: int, size: int) -> bytes | bytearray:
    from graphfreeze.io import storage
    from graphfreeze.io.paths import gfile, is_remote

    if not storage.exists(path):
        raise BundleError(f"{path}: checkpoint data shard missing; copy all .data-* files")
    if is_remote(path):
        with gfile().GFile(path, "rb") as f:
            f.seek(offset)
            return f.read(size)
    with open(path, "rb") as f:  # no more than the file holds: read(n) allocates n bytes first
        size = min(size, max(os.fstat(f.fileno()).st_size - offset, 0))
        f.seek(offset)
        data = bytearray(size)  # (writable: a graph pass may edit the value in place)
        del data[f.readinto(data):]
        return data
