"""A V2 checkpoint (TensorBundle) written without TensorFlow, as SaveV2 writes one: each numeric
array's bytes streamed into one `.data-00000-of-00001` shard as they are in memory (no copy),
its BundleEntryProto (dtype, shape, offset, size, masked crc32c) in the `.index` table. What
TensorFlow's BundleReader restores (and proto/bundle.py reads)."""

from __future__ import annotations

import numpy as np
from graphfreeze.proto import dtypes
from graphfreeze.proto.table import crc32c, masked, table_bytes

SHARD = ".data-00000-of-00001"
_PIECE = 64 << 20  # written and checksummed a piece at a time


def write_bundle(prefix: str, arrays: dict) -> None:
    """`arrays` ({name: numeric numpy array}) as the checkpoint at `prefix` (local files)."""
    from graphfreeze.proto.tf import tensor_bundle_pb2

    rows, offset = [], 0
    with open(prefix + SHARD, "wb") as shard:
        for name in sorted(arrays):
            array = np.asarray(arrays[name])
            array = array.astype(array.dtype.newbyteorder("<"), order="C", copy=False)  # (no
            # copy of a C-ordered little-endian array)
            enum = dtypes.enum_of(array.dtype)
            if enum is None or array.dtype.kind not in "biufc":
                raise ValueError(f"'{name}': a {array.dtype} array is not written as raw bytes")
            view, crc = memoryview(array.reshape(-1).view(np.uint8)), 0
            for start in range(0, len(view), _PIECE):
                piece = view[start:start + _PIECE]
                shard.write(piece)
                crc = crc32c(bytes(piece), crc)
            entry = tensor_bundle_pb2.BundleEntryProto(dtype=enum, shard_id=0, offset=offset,
                                                       size=len(view), crc32c=masked(crc))
            for dim in array.shape:
                entry.shape.dim.add().size = dim
            rows.append((name.encode(), entry.SerializeToString(deterministic=True)))
            offset += len(view)
    header = tensor_bundle_pb2.BundleHeaderProto(num_shards=1, endianness=0)
    header.version.producer = 1
    with open(prefix + ".index", "wb") as index:
        index.write(table_bytes([(b"", header.SerializeToString(deterministic=True)), *rows]))
