"""A TensorProto's value as a numpy array without TensorFlow: what `tensor_util.MakeNdarray`
returns (a test compares the two), for the dtypes numpy holds."""

from __future__ import annotations

from graphfreeze.proto import dtypes

_FIELDS = {1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val",
           6: "int_val", 9: "int64_val", 10: "bool_val", 11: "int_val", 12: "int_val",
           13: "int_val", 15: "int_val", 16: "int_val", 17: "int_val", 22: "uint32_val",
           23: "uint64_val", 8: "scomplex_val", 18: "dcomplex_val", 14: "half_val",
           19: "half_val", 7: "string_val"}


def to_numpy(tensor):
    """The array a TensorProto holds (tensor_content, or the typed values, the last repeated to
    fill the shape); ValueError for a dtype numpy has no value for, or more values than fit."""
    import numpy as np

    dtype = dtypes.numpy_dtype(tensor.dtype)
    if dtype is None or tensor.dtype not in _FIELDS:
        raise ValueError(f"no numpy value for a {dtypes.name(tensor.dtype)} tensor")
    shape = [d.size for d in tensor.tensor_shape.dim]
    count = int(np.prod(shape, dtype=np.int64))
    if tensor.tensor_content and tensor.dtype != dtypes.STRING:
        return np.frombuffer(tensor.tensor_content, dtype=dtype).copy().reshape(shape)
    values = getattr(tensor, _FIELDS[tensor.dtype])
    if tensor.dtype == dtypes.STRING:
        array = np.empty(len(values), dtype=object)
        array[:] = list(values)
    elif tensor.dtype in (14, 19):  # half_val holds the 16 bits of each value
        array = np.array(values, dtype=np.uint16).view(dtype)
    elif tensor.dtype in (8, 18):  # real, imaginary, real, ...
        parts = np.array(values, dtype=np.float32 if tensor.dtype == 8 else np.float64)
        array = parts[0::2] + 1j * parts[1::2]
        array = array.astype(dtype)
    else:
        array = np.array(values, dtype=dtype)
    if array.size == count:
        return array.reshape(shape)
    if array.size == 0:
        return np.zeros(shape, dtype=dtype) if tensor.dtype != dtypes.STRING else \
            np.full(shape, "", dtype=object)  # as MakeNdarray has it: str, not bytes
    if array.size > count:
        raise ValueError(f"{array.size} values for shape {shape}")
    return np.pad(array, (0, count - array.size), "edge").reshape(shape)
