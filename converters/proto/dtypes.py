"""TensorFlow's DataType enum without TensorFlow: names, bytes per element and numpy dtypes, as
`tf.dtypes.as_dtype(value)` gives them (a test compares every value with TensorFlow's)."""

from __future__ import annotations

import functools

# value -> (name, bytes per element: 0 for strings, resources and variants)
DTYPES = {1: ("float32", 4), 2: ("float64", 8), 3: ("int32", 4), 4: ("uint8", 1), 5: ("int16", 2),
          6: ("int8", 1), 7: ("string", 0), 8: ("complex64", 8), 9: ("int64", 8), 10: ("bool", 1),
          11: ("qint8", 1), 12: ("quint8", 1), 13: ("qint32", 4), 14: ("bfloat16", 2),
          15: ("qint16", 2), 16: ("quint16", 2), 17: ("uint16", 2), 18: ("complex128", 16),
          19: ("float16", 2), 20: ("resource", 0), 21: ("variant", 0), 22: ("uint32", 4),
          23: ("uint64", 8), 24: ("float8_e5m2", 1), 25: ("float8_e4m3fn", 1),
          26: ("float8_e4m3fnuz", 1), 27: ("float8_e4m3b11fnuz", 1), 28: ("float8_e5m2fnuz", 1),
          29: ("int4", 1), 30: ("uint4", 1), 31: ("int2", 1), 32: ("uint2", 1),
          33: ("float4_e2m1fn", 1)}
STRING, RESOURCE, VARIANT = 7, 20, 21
_QUANTIZED = {"qint8": "int8", "quint8": "uint8", "qint16": "int16", "quint16": "uint16",
              "qint32": "int32"}  # stored as these integers


def name(dtype: int) -> str:
    """'float32' for 1; a reference type (100 + value) as 'float32_ref'; unknown values as digits."""
    if dtype - 100 in DTYPES:
        return DTYPES[dtype - 100][0] + "_ref"
    return DTYPES[dtype][0] if dtype in DTYPES else str(dtype)


def itemsize(dtype: int) -> int:
    """Bytes per element (0: strings, resources, variants and unknown values)."""
    return DTYPES.get(dtype - 100 if dtype - 100 in DTYPES else dtype, ("", 0))[1]


@functools.cache
def numpy_dtype(dtype: int):
    """The numpy dtype a tensor of `dtype` is read as (object for strings); None if numpy has
    none (resources, variants, unknown values)."""
    import numpy as np

    found = name(dtype)
    if dtype == STRING:
        return np.dtype(object)
    if dtype not in DTYPES or not itemsize(dtype):
        return None
    found = _QUANTIZED.get(found, found)
    try:
        return np.dtype(found)
    except TypeError:  # bfloat16, float8_*, int4, ...: TensorFlow's own numpy types
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, found))


@functools.cache
def _enums() -> dict:
    return {numpy_dtype(value): value for value in sorted(DTYPES, reverse=True)
            if value not in (7, 11, 12, 13, 15, 16) and numpy_dtype(value) is not None}


def enum_of(np_dtype) -> int | None:
    """The DataType a numpy dtype is written as (`tf.as_dtype(d).as_datatype_enum`); None for
    object arrays and dtypes TensorFlow has no type for."""
    import numpy as np

    return _enums().get(np.dtype(np_dtype))
