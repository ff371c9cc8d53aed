"""What a V1 checkpoint holds (`SaverDef.V1`: TensorSliceWriter's tables, one file or
`-NNNNN-of-NNNNN` shards), without TensorFlow: each table's meta entry (the empty key, a
SavedTensorSlices) names its tensors with shape and dtype. Tensor values are read by TensorFlow."""

from __future__ import annotations

from graphfreeze.proto.bundle import BundleError
from graphfreeze.proto.table import TableError, read_table


def v1_variables(files: list[str]) -> dict[str, tuple[list[int], int]]:
    """name -> (shape, DataType) of every tensor the V1 checkpoint `files` hold."""
    from google.protobuf.message import DecodeError
    from graphfreeze.io import storage
    from graphfreeze.proto.tf import saved_tensor_slice_pb2

    found = {}
    for path in files:
        try:
            rows = read_table(storage.read_bytes(path))
            if not rows or rows[0][0] != b"":
                raise TableError("no meta entry")
            meta = saved_tensor_slice_pb2.SavedTensorSlices.FromString(bytes(rows[0][1])).meta
        except (TableError, DecodeError) as err:
            raise BundleError(f"{path}: not a readable V1 checkpoint ({err})") from err
        for tensor in meta.tensor:
            shape = [d.size for d in tensor.shape.dim]
            if tensor.shape.unknown_rank or any(d < 0 for d in shape):
                raise BundleError(f"{path}: tensor '{tensor.name}' has an unknown or negative "
                                  "shape")
            found[tensor.name] = (shape, tensor.type)
    return found
