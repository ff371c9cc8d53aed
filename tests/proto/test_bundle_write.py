"""write_bundle: a V2 checkpoint written without TensorFlow, read back by TensorFlow's own
reader (RestoreV2, as a SavedModel's loader restores variables) and by proto/bundle.py."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.proto.bundle import Bundle
from graphfreeze.proto.bundle_write import write_bundle


def _arrays() -> dict:
    rng = np.random.default_rng(0)
    read_only = rng.standard_normal((40, 7)).astype(np.float32)
    read_only.flags.writeable = False
    arrays = {"dense/kernel": rng.standard_normal((300, 70)).astype(np.float32),
              "step": np.array(7, np.int64), "half": rng.standard_normal(9).astype(np.float16),
              "mask": rng.random((3, 4)) > 0.5, "read_only": read_only,
              "strided": np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2],
              "big_endian": np.arange(5, dtype=">i4")}
    arrays.update({f"many/{i:04d}": np.full(2, i, np.int32) for i in range(300)})
    return arrays


def test_tensorflow_restores_what_is_written(tmp_path):
    import tensorflow as tf

    arrays = _arrays()
    prefix = str(tmp_path / "variables")
    write_bundle(prefix, arrays)
    for name, value in arrays.items():
        (got,) = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=[name], shape_and_slices=[""],
                                      dtypes=[tf.as_dtype(value.dtype.newbyteorder("="))])
        assert got.shape == value.shape and np.array_equal(got.numpy(), value), name


def test_our_reader_reads_it_whole(tmp_path):
    arrays = _arrays()
    write_bundle(str(tmp_path / "variables"), arrays)
    bundle = Bundle(str(tmp_path / "variables"))
    bundle.check_shards()
    assert sorted(bundle.entries) == sorted(arrays)
    for name, value in arrays.items():
        got = bundle.read(name)
        assert got.shape == value.shape and np.array_equal(got, value), name


def test_strings_are_not_raw_bytes(tmp_path):
    with pytest.raises(ValueError, match="'words'"):
        write_bundle(str(tmp_path / "variables"), {"words": np.array([b"a", b"b"], object)})
