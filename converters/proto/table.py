"""TensorFlow's immutable key-value table (tensorflow/core/lib/io/table, LevelDB's format): what
a checkpoint's `.index` is. Read whole, every block's checksum verified; a damaged table is a
`TableError` saying what is wrong (the caller names the file)."""

from __future__ import annotations

import struct

MAGIC = 0xDB4775248B80FB57
FOOTER = 48  # two block handles (varints, padded to 40 bytes) and the magic number
TRAILER = 5  # after each block: compression type (1 byte), masked crc32c (4 bytes)


class TableError(ValueError):
    """The bytes are not a sound table."""


def _crc32c_python(data: bytes, crc: int = 0) -> int:
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _table() -> list[int]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


_TABLE = _table()


_CRC_PIECE = 1 << 20


def crc32c(data: bytes | bytearray, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of `data`, extending `crc` (google-crc32c's C code when installed)."""
    try:
        import google_crc32c
    except ImportError:
        return _crc32c_python(data, crc)
    if isinstance(data, bytes):
        return google_crc32c.extend(crc, data)
    view = memoryview(data)  # (it takes bytes only: a writable buffer a piece at a time)
    for start in range(0, len(view), _CRC_PIECE):
        crc = google_crc32c.extend(crc, bytes(view[start:start + _CRC_PIECE]))
    return crc


def masked(crc: int) -> int:
    """The masked form TensorFlow stores (crc32c::Mask)."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(data, pos: int) -> tuple[int, int]:
    """(value, next position) of the varint64 at `pos`."""
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise TableError("a varint runs past its block")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7


def _handle(data, pos: int) -> tuple[int, int, int]:
    offset, pos = varint(data, pos)
    size, pos = varint(data, pos)
    return offset, size, pos


def _block(data: bytes, offset: int, size: int) -> memoryview:
    end = offset + size
    if end + TRAILER > len(data) - FOOTER or size < 4:
        raise TableError(f"a block ({size} bytes at {offset}) runs past the end of the table")
    kind, stored = data[end], struct.unpack_from("<I", data, end + 1)[0]
    if masked(crc32c(data[offset:end + 1])) != stored:
        raise TableError(f"block checksum mismatch at offset {offset}")
    if kind != 0:
        raise TableError(f"block at {offset} is compressed (type {kind}); graphfreeze reads the "
                         "uncompressed tables TensorFlow writes")
    return memoryview(data)[offset:end]


def _entries(block: memoryview):
    """(key, value) of each entry of a block, keys restored from their shared prefixes."""
    restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    limit = len(block) - 4 - 4 * restarts
    if restarts == 0 or limit < 0:
        raise TableError("a block's restart array is broken")
    pos, key = 0, b""
    while pos < limit:
        shared, pos = varint(block, pos)
        unshared, pos = varint(block, pos)
        size, pos = varint(block, pos)
        if shared > len(key) or pos + unshared + size > limit:
            raise TableError("an entry runs past its block")
        key = key[:shared] + bytes(block[pos:pos + unshared])
        pos += unshared
        yield key, block[pos:pos + size]
        pos += size


def read_table(data: bytes) -> list[tuple[bytes, memoryview]]:
    """Every (key, value) of the table in `data`, in key order."""
    if len(data) < FOOTER or struct.unpack_from("<Q", data, len(data) - 8)[0] != MAGIC:
        raise TableError("not a TensorFlow table (no table footer; truncated?)")
    _, _, pos = _handle(data, len(data) - FOOTER)  # the metaindex: empty in TensorFlow's tables
    offset, size, _ = _handle(data, pos)
    out, last = [], None
    for _, handle in _entries(_block(data, offset, size)):
        block_offset, block_size, _ = _handle(handle, 0)
        for key, value in _entries(_block(data, block_offset, block_size)):
            if last is not None and key <= last:
                raise TableError("keys out of order")
            out.append((key, value))
            last = key
    return out


def table_bytes(rows: list[tuple[bytes, bytes]]) -> bytes:
    """A table of `rows` (keys sorted, unique), as TensorFlow's TableBuilder writes one
    uncompressed: one data block, its index block, an empty metaindex block, the footer."""
    from graphfreeze.proto.stream import encode_varint

    out = bytearray()

    def block(entries) -> bytes:  # every entry a restart point (no shared key prefixes)
        body, restarts = bytearray(), []
        for key, value in entries:
            restarts.append(len(body))
            body += b"\x00" + encode_varint(len(key)) + encode_varint(len(value)) + key + value
        body += struct.pack(f"<{len(restarts) or 1}I", *(restarts or [0]))
        body += struct.pack("<I", len(restarts) or 1)
        handle = encode_varint(len(out)) + encode_varint(len(body))
        out.extend(body + b"\x00" + struct.pack("<I", masked(crc32c(bytes(body) + b"\x00"))))
        return handle

    data = block(rows)
    meta = block([])
    index = block([(rows[-1][0], data)] if rows else [])
    out += (meta + index).ljust(FOOTER - 8, b"\x00") + struct.pack("<Q", MAGIC)
    return bytes(out)
