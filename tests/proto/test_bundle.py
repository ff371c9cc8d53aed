"""The V2 checkpoint read without TensorFlow (graphfreeze.proto.bundle) against TensorFlow's own
reader: every tensor's name, dtype, shape and bytes, on the sample and zoo checkpoints and one of
every dtype, several shards and long strings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.proto.bundle import Bundle


def assert_same_as_tensorflow(prefix: Path) -> int:
    """Every entry and tensor equal to tf.train.load_checkpoint's; the count of tensors read."""
    ours, theirs = Bundle(str(prefix)), tf.train.load_checkpoint(str(prefix))
    shapes, types = theirs.get_variable_to_shape_map(), theirs.get_variable_to_dtype_map()
    assert {n: (list(e.shape), e.dtype) for n, e in ours.entries.items()} == \
        {n: (list(s), types[n].as_datatype_enum) for n, s in shapes.items()}
    read = 0
    for name, entry in ours.entries.items():
        if entry.sliced:  # a partitioned variable's whole: TensorFlow assembles its slices
            continue
        mine, want = ours.read(name), theirs.get_tensor(name)
        if entry.dtype == 7:
            want = np.asarray(want, dtype=object) if not isinstance(want, bytes) else want
            assert mine.tolist() == (want if isinstance(want, bytes) else want.tolist()), name
        else:
            assert mine.dtype == want.dtype and mine.shape == want.shape, name
            assert mine.tobytes() == np.ascontiguousarray(want).tobytes(), name
        read += 1
    return read


def test_sample_checkpoints(samples, other_samples):
    prefixes = sorted(p.with_suffix("") for p in samples.glob("*/*.index"))
    prefixes += [other_samples / name / "variables" / "variables"
                 for name in ("tf1_savedmodel", "tf2_savedmodel")]
    assert len(prefixes) >= 8
    assert sum(assert_same_as_tensorflow(p) for p in prefixes) > 100


def test_zoo_checkpoint(zoo):
    path, _ = zoo("slim_inception")
    prefixes = list(Path(path).parent.glob("*.index")) or list(Path(path).glob("*.index"))
    assert prefixes
    assert assert_same_as_tensorflow(prefixes[0].with_suffix("")) > 10


def every_dtype_checkpoint(folder: Path) -> Path:
    """A checkpoint in two shards (merged by TensorFlow) holding a tensor of each dtype TensorFlow
    saves, empty and long strings among them."""
    values = {"f32": tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3)),
              "f16": tf.constant([1.5, -2], tf.float16), "bf16": tf.constant([0.5, 3], tf.bfloat16),
              "f64": tf.constant([np.pi]), "i8": tf.constant([-1, 2], tf.int8),
              "u8": tf.constant([255], tf.uint8), "i16": tf.constant([-7], tf.int16),
              "u16": tf.constant([9], tf.uint16), "i32": tf.constant([[1, 2]], tf.int32),
              "u32": tf.constant([2**31], tf.uint32), "i64": tf.constant(-2**40, tf.int64),
              "u64": tf.constant([2**63], tf.uint64), "b": tf.constant([True, False]),
              "c64": tf.constant([1 + 2j], tf.complex64), "c128": tf.constant([3j], tf.complex128),
              "empty": tf.zeros([0, 4]), "s": tf.constant([b"", b"x" * 300, "é".encode()]),
              "s0": tf.constant(b"scalar")}
    names = sorted(values)
    parts = []
    for shard, chunk in enumerate((names[::2], names[1::2])):
        part = str(folder / f"part{shard}")
        tf.raw_ops.SaveV2(prefix=part, tensor_names=chunk, shape_and_slices=[""] * len(chunk),
                          tensors=[values[n] for n in chunk])
        parts.append(part)
    tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=parts,
                                  destination_prefix=str(folder / "all"))
    return folder / "all"


def test_every_dtype_and_shards(tmp_path):
    prefix = every_dtype_checkpoint(tmp_path)
    assert Bundle(str(prefix)).num_shards == 2
    assert assert_same_as_tensorflow(prefix) == 18


@pytest.mark.parametrize("name", ["iris", "iris_partitioned"])
def test_index_listing_is_tensorflows(samples, name):
    """What inspect lists (describe.checkpoint_variables) is what TensorFlow's reader gives."""
    from graphfreeze.sources.checkpoint_files import _tensorflow_variables, checkpoint_variables

    prefix = str(samples / name / "model.ckpt-200")
    theirs = _tensorflow_variables(prefix)
    assert [(v["name"], v["shape"], v["dtype"], v["bytes"]) for v in
            checkpoint_variables(prefix)] == [(n, *theirs[n]) for n in sorted(theirs)]


@pytest.mark.parametrize("sharded", [False, True])
def test_v1_checkpoint_listing_is_tensorflows(tmp_path, sharded):
    """A V1 checkpoint (one file, or -NNNNN-of-NNNNN shards) listed from its tables' meta."""
    from graphfreeze.sources.checkpoint_files import (
        _tensorflow_variables,
        checkpoint_variables,
        reader_path,
        v1_files,
    )
    from tensorflow.core.protobuf import saver_pb2

    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as session:
        v1.get_variable("dense/kernel", [4, 3])
        v1.get_variable("step", [], tf.int64, initializer=v1.zeros_initializer())
        v1.get_variable("names", [2], tf.string, initializer=v1.constant_initializer(["a", "b"]))
        session.run(v1.global_variables_initializer())
        saver = v1.train.Saver(write_version=saver_pb2.SaverDef.V1, sharded=sharded)
        prefix = str(tmp_path / "model.ckpt")
        saver.save(session, prefix, write_meta_graph=False)
    assert len(v1_files(prefix)) == 1 and v1_files(prefix)[0].endswith("-of-00001") == sharded
    theirs = _tensorflow_variables(reader_path(prefix))
    assert [(v["name"], v["shape"], v["dtype"], v["bytes"]) for v in
            checkpoint_variables(prefix)] == [(n, *theirs[n]) for n in sorted(theirs)]


def test_crc32c_without_google_crc32c_is_the_same():
    """The pure-Python CRC-32C (a base install has no google-crc32c) equals the C one."""
    import google_crc32c
    from graphfreeze.proto.table import _crc32c_python

    for data in (b"", b"a", bytes(range(256)) * 40):
        assert _crc32c_python(data) == google_crc32c.value(data)
        assert _crc32c_python(data[7:], _crc32c_python(data[:7])) == google_crc32c.value(data)
