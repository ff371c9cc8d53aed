"""A binary proto file parsed a few MB at a time: never its whole bytes and their parse at once.

Protobuf's wire format merges: parsing a message's fields in several pieces, each piece merged
into the message, gives the message a single parse gives (repeated fields appended in order, a
singular sub-message merged). So the file is read field by field and merged in chunks of about
CHUNK bytes; a singular sub-message named in `split` (a MetaGraphDef's `graph_def`, a GraphDef's
`library`) is itself read field by field, each chunk of its fields wrapped in its tag (so every
field is parsed at the depth it has in the file: the same recursion limits); a field over
1 MB (a weight) is read into a buffer of its own, and one over a chunk merged alone. Parsing
a 97 MB frozen graph then adds 1.14x its size to the process, not 2x (its bytes and their
parse): `freeze inspect` of it peaks at 168 MB, not 241 MB.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

CHUNK = 4 << 20
GRAPH_SPLIT = {2: {}}  # GraphDef.library: one function at a time (nodes are top-level already)
META_GRAPH_SPLIT = {2: GRAPH_SPLIT}  # MetaGraphDef.graph_def


def merge_file(message, path: str, split: dict, chunk: int = CHUNK, hold=None):
    """Merge the binary `message` serialized in the local file `path` into `message`, reading
    it piece by piece (DecodeError: not that message, or truncated). `hold(field)`: each
    top-level field of HOLD_BYTES or more, read into a bytearray of its own, is merged as the
    bytes it returns (graph/held_values.py takes a weight's value out that way)."""
    import os

    with open(path, "rb") as f:
        _Reader(f, message, chunk, hold).fields(os.fstat(f.fileno()).st_size, split, ())
    return message


HOLD_BYTES = 64 << 10  # fields this big are read into a buffer of their own when held


class _Reader:
    def __init__(self, f, message, chunk: int, hold=None):
        self.file, self.message, self.chunk, self.hold = f, message, chunk, hold
        self.own = 1 << 20 if hold is None else HOLD_BYTES  # a field this big: its own buffer
        self.buf, self.pos = b"", 0  # what is read of the file and not yet taken
        self.span = -1  # where in buf the fields before pos not yet in parts start (-1: none)
        self.parts: list[bytes] = []
        self.size = 0
        self.path: tuple[bytes, ...] = ()  # tags of the split sub-messages the parts are in

    def fields(self, length: int, split: dict, path: tuple[bytes, ...]) -> None:
        """Read `length` bytes of fields (those of the message `path` leads to); flush at the
        top."""
        try:
            while length > 0:
                if len(self.buf) - self.pos < 20:
                    self._fill(20)
                buf = self.buf
                start = self.pos
                tag, pos = read_varint(buf, start)
                tag_end, wire = pos, tag & 7
                if wire == 2:
                    count, pos = read_varint(buf, pos)
                elif wire == 0:
                    count, pos = read_varint(buf, pos)[1] - pos, pos
                elif wire in (1, 5):
                    count = 8 if wire == 1 else 4
                else:  # groups (deprecated) and invalid wire types: not a message we read
                    raise DecodeError(f"unsupported wire type {wire}")
                length -= pos - start + count
                if length < 0:  # (before reading it: a corrupt length is no allocation)
                    raise DecodeError("a field runs past the end of its message")
                if wire == 2 and count and tag >> 3 in split:
                    self._settle()
                    self.pos = pos
                    self.fields(count, split[tag >> 3], (*path, buf[start:tag_end]))
                elif pos + count <= len(buf) and pos + count - start < self.own and \
                        path == self.path:  # in the buffer: the run of such fields grows
                    if self.span < 0:
                        self.span = start
                    self.pos = pos + count
                    self.size += pos + count - start
                    if self.size >= self.chunk:
                        self._flush()
                else:
                    self._settle()  # (a big field's read empties the buffer)
                    self.pos = start
                    raw = self._take(pos - start + count)
                    if self.hold is not None and not path and isinstance(raw, bytearray):
                        raw = self.hold(raw)
                    self._add(path, raw)
        except IndexError:  # a varint past the end of the file
            raise DecodeError("truncated message") from None
        if not path:
            self._flush()

    def _settle(self) -> None:
        """The run of fields still in the buffer, made a part."""
        if self.span >= 0:
            self.parts.append(self.buf[self.span:self.pos])
            self.span = -1

    def _add(self, path: tuple[bytes, ...], raw) -> None:
        self._settle()
        if path != self.path or len(raw) >= self.chunk:  # (a big field is merged on its own)
            self._flush()
            self.path = path
        self.parts.append(raw)
        self.size += len(raw)
        if self.size >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        self._settle()
        if not self.parts:
            return
        data = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        self.parts, self.size = [], 0
        for tag in reversed(self.path):
            data = tag + encode_varint(len(data)) + data
        self.message.MergeFromString(data)

    def _fill(self, count: int) -> None:
        """At least `count` bytes after `pos` in the buffer, or all the file has."""
        if len(self.buf) - self.pos < count:
            self._settle()
            self.buf = self.buf[self.pos:] + self.file.read(max(count, 1 << 20))
            self.pos = 0

    def _take(self, count: int):
        have = len(self.buf) - self.pos
        if count < self.own:
            self._fill(count)
            data = self.buf[self.pos:self.pos + count]
            self.pos += len(data)
        else:  # a big field (a weight): read into its own buffer, the one copy of it
            data = bytearray(count)
            got = min(have, count)
            data[:got] = memoryview(self.buf)[self.pos:self.pos + got]
            self.pos += got
            if got < count:
                got += self.file.readinto(memoryview(data)[got:])
                self.buf, self.pos = b"", 0
            if got != count:
                data = b""
        if len(data) != count:
            raise DecodeError("truncated message")
        return data


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `pos` (IndexError: past the end)."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7
        if shift >= 70:
            raise DecodeError("a varint is too long")


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
