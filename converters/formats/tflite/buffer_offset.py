"""A .tflite over 2 GiB in LiteRT's buffer-offset layout (issue 46), its weights never copied.

A flatbuffer addresses 2 GiB; TFLiteConverter's `_experimental_use_buffer_offset` writes each
buffer's bytes after the flatbuffer, in the same file, the buffer holding their `offset` (from the
file's start) and `size`, with the metadata `buffer_location` = "outside flatbuffers". Its input
is one GraphDef, though (2 GiB again), so the converter gets the graph with each weight held
apart as a Placeholder (graph/stand_ins.py), and `write` makes those inputs constants again in
that layout, their bytes written from the held arrays themselves.
"""

from __future__ import annotations

import numpy as np

ALIGN = 64  # each buffer's bytes start at a multiple of this
LOCATION = b"outside flatbuffers"  # TFLiteConverter's `buffer_location` metadata


def write(data: bytes, arrays: dict[str, np.ndarray], path: str) -> bytes:
    """`data`, a converted flatbuffer whose inputs named as `arrays`' keys (node names) are
    stand-ins, written to `path` with those as constants of the arrays and every tensor's
    buffer after the flatbuffer; returns the flatbuffer part (what tools that read the model's
    structure take)."""
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf(data, 0)
    model.buffers = model.buffers or [schema.BufferT()]
    payload: list[tuple] = []  # (buffer, its bytes)
    for sub in model.subgraphs:
        for i in sub.inputs:
            array = arrays.get(sub.tensors[i].name.decode())
            if array is not None:
                buffer = schema.BufferT()
                model.buffers.append(buffer)
                sub.tensors[i].buffer = len(model.buffers) - 1
                payload.append((buffer, np.ascontiguousarray(array)))
        sub.inputs = [i for i in sub.inputs if sub.tensors[i].name.decode() not in arrays]
    for signature in model.signatureDefs or []:
        signature.inputs = [t for t in signature.inputs
                            if model.subgraphs[signature.subgraphIndex].tensors[t.tensorIndex]
                            .name.decode() not in arrays]
    meta_buffers = {m.buffer for m in model.metadata or []}
    for index, buffer in enumerate(model.buffers):
        if index not in meta_buffers and buffer.data is not None and len(buffer.data):
            payload.append((buffer, np.asarray(buffer.data, dtype=np.uint8)))
            buffer.data = None
    location = schema.BufferT()
    location.data = np.frombuffer(LOCATION, dtype=np.uint8)
    model.buffers.append(location)
    entry = schema.MetadataT()
    entry.name, entry.buffer = b"buffer_location", len(model.buffers) - 1
    model.metadata = [*(model.metadata or []), entry]
    for buffer, value in payload:  # offsets as wide as the real ones, to size the flatbuffer
        buffer.offset, buffer.size = 1 << 62, value.nbytes
    flat = _packed(model, schema)
    offset = len(flat)
    for buffer, value in payload:
        offset += -offset % ALIGN
        buffer.offset = offset
        offset += value.nbytes
    sized, flat = len(flat), _packed(model, schema)
    assert len(flat) == sized, "the offsets changed the flatbuffer's size"
    with open(path, "wb") as f:
        f.write(flat)
        for buffer, value in payload:
            f.write(b"\0" * (buffer.offset - f.tell()))
            f.write(memoryview(value).cast("B"))
    return flat


def _packed(model, schema) -> bytes:
    import flatbuffers

    builder = flatbuffers.Builder(1 << 20)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
