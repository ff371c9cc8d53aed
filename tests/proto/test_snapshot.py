"""graphfreeze.proto's snapshot of TensorFlow against the installed TensorFlow: the copied _pb2
modules, the op registry, graph versions, DataTypes and TensorProto values; and the floor's
reads and writes without TensorFlow in the process."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.proto import dtypes, snapshot
from graphfreeze.proto.tensors import to_numpy
from tensorflow.python.framework import tensor_util

FREE = """import sys
from graphfreeze.proto.tf import graph_pb2, meta_graph_pb2, saved_model_pb2
kind, path, out = sys.argv[1:]
cls = {"graph": graph_pb2.GraphDef, "meta": meta_graph_pb2.MetaGraphDef,
       "saved_model": saved_model_pb2.SavedModel}[kind]
open(out, "wb").write(cls.FromString(open(path, "rb").read()).SerializeToString(deterministic=True))
assert "tensorflow" not in sys.modules
"""


def test_copied_modules_are_tensorflows():
    """Every copy is TensorFlow's module with its imports pointed here, and gives TensorFlow's
    own classes once TensorFlow is imported (one descriptor pool)."""
    import importlib

    for name, source in snapshot.module_sources().items():
        ours = importlib.import_module("graphfreeze.proto.tf." + name.rsplit(".", 1)[1])
        assert (snapshot.GENERATED / (name.rsplit(".", 1)[1] + ".py")).read_text() == \
            snapshot.local_source(source), f"{name}: run python -m graphfreeze.proto.snapshot"
        theirs = importlib.import_module(name)
        assert ours.DESCRIPTOR.serialized_pb == theirs.DESCRIPTOR.serialized_pb
        for message in theirs.DESCRIPTOR.message_types_by_name:
            assert getattr(ours, message) is getattr(theirs, message)


def test_op_registry_and_versions_match_tensorflow(tmp_path):
    """In a fresh process: this one's registry may hold ops that other tests' libraries loaded."""
    code = ("import json, sys\nfrom graphfreeze.proto import snapshot\n"
            "open(sys.argv[1], 'wb').write(snapshot.op_list_bytes())\n"
            "open(sys.argv[2], 'w').write(json.dumps(snapshot.versions()))")
    ops, versions = tmp_path / "ops.pb", tmp_path / "versions.json"
    subprocess.run([sys.executable, "-c", code, str(ops), str(versions)], check=True)
    assert snapshot.OP_DEFS.read_bytes() == ops.read_bytes()
    assert json.loads(snapshot.VERSIONS.read_text()) == json.loads(versions.read_text())


def test_dtypes_match_tensorflow():
    from tensorflow.core.framework import types_pb2

    for value in types_pb2.DataType.values():
        if value in (0, 20, 21, 120, 121) or value - 100 not in dtypes.DTYPES and value > 100:
            continue
        theirs = tf.dtypes.as_dtype(value)
        assert dtypes.name(value) == theirs.name
        assert dtypes.itemsize(value) == (0 if theirs == tf.string else theirs.size)
        if value < 100 and value != 7 and theirs.name[0] != "q":
            assert dtypes.numpy_dtype(value) == np.dtype(theirs.as_numpy_dtype)
    assert dtypes.name(20) == tf.resource.name and dtypes.name(21) == tf.variant.name


@pytest.mark.parametrize("value, dtype, shape", [
    ([1.5, -2.0, 3.25], tf.float32, [3]), ([7], tf.int32, [2, 3]), ([1, 2], tf.int64, [2]),
    (None, tf.float64, [2, 2]), (None, tf.string, [2]), ([1.0, 0.5], tf.float16, [4]),
    ([0.25], tf.bfloat16, [2]),
    ([True, False], tf.bool, [2]), ([1 + 2j], tf.complex64, [3]), ([3 - 1j], tf.complex128, []),
    ([b"a", b"bc"], tf.string, [3]), ([5], tf.uint8, [2]), ([-3], tf.int8, []),
    ([40000], tf.uint16, [1]), ([2**33], tf.uint64, [2]), ([2**31], tf.uint32, [1]),
    (np.arange(12, dtype=np.float32).reshape(3, 4), tf.float32, [3, 4]),
    (np.arange(6, dtype=np.int16), tf.int16, [6])])
def test_tensor_values_match_make_ndarray(value, dtype, shape):
    if value is None:  # no values at all: zeros
        from tensorflow.core.framework import tensor_pb2

        proto = tensor_pb2.TensorProto(dtype=dtype.as_datatype_enum,
                                       tensor_shape=tf.TensorShape(shape).as_proto())
    elif np.size(value) == 1:  # one value, repeated to fill the shape
        proto = tf.make_tensor_proto(value, dtype=dtype, shape=shape, allow_broadcast=True)
    else:
        proto = tf.make_tensor_proto(value, dtype=dtype, shape=shape)
    ours, theirs = to_numpy(proto), tensor_util.MakeNdarray(proto)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tolist() == theirs.tolist()


def test_graphs_read_and_written_without_tensorflow_are_tensorflows(other_samples, samples, zoo,
                                                                     tmp_path):
    """GraphDef, MetaGraphDef and SavedModel bytes parsed and written in a process without
    TensorFlow are TensorFlow's serialization of the same files, byte for byte."""
    from pathlib import Path

    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

    slim = Path(zoo("slim_inception")[0])
    cases = [("graph", other_samples / "frozen.pb"),
             ("meta", samples / "iris" / "model.ckpt-200.meta"),
             ("meta", samples / "cnn_v2" / "model.ckpt-200.meta"),
             ("meta", next((slim if slim.is_dir() else slim.parent).glob("*.meta"))),
             ("saved_model", other_samples / "tf1_savedmodel" / "saved_model.pb"),
             ("saved_model", other_samples / "tf2_savedmodel" / "saved_model.pb")]
    classes = {"graph": graph_pb2.GraphDef, "meta": meta_graph_pb2.MetaGraphDef,
               "saved_model": saved_model_pb2.SavedModel}
    for i, (kind, path) in enumerate(cases):
        out = tmp_path / f"{i}.pb"
        subprocess.run([sys.executable, "-c", FREE, kind, str(path), str(out)], check=True)
        theirs = classes[kind].FromString(path.read_bytes())
        assert out.read_bytes() == theirs.SerializeToString(deterministic=True), path


def test_op_def_reads_the_snapshot_while_another_thread_imports_tensorflow():
    """A stage's thread importing TensorFlow (verify data's images) while the export asks for an
    op's definition: importing TensorFlow's registry then would race that import (a
    _DeadlockError or a half-made module, 1 run in 10); the snapshot answers until it is done.
    The import guard is gone once TensorFlow is imported."""
    code = ("import builtins, sys, threading, time\n"
            "from graphfreeze.proto import ops\n"
            "from graphfreeze.process.tensorflow_child import one_import_at_a_time\n"
            "plain = builtins.__import__\n"
            "one_import_at_a_time()\n"
            "thread = threading.Thread(target=__import__, args=('tensorflow',))\n"
            "thread.start()\n"
            "while 'tensorflow' not in sys.modules:\n"
            "    time.sleep(0.0005)\n"
            "during = ops.op_def('Const').name, ops.tensorflow_imported()\n"
            "thread.join()\n"
            "import json\n"  # the guard then removes itself: Python's own import back
            "print(during, ops.tensorflow_imported(), ops.op_def('Const').name,\n"
            "      builtins.__import__ is plain)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "('Const', False) True Const True"
