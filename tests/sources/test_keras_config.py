"""sources/keras_config.py: Keras configs read without loading, Lambda and host-touching
TFOpLambda layers refused."""

from __future__ import annotations

import pytest
from graphfreeze.errors import InputError
from graphfreeze.sources.keras_config import check_keras_config, keras_function_use, read_keras_config


def test_keras_tfoplambda_write_refused(hostile_models):
    config = read_keras_config(str(hostile_models / "models" / "keras_write.h5"))
    with pytest.raises(InputError) as err:
        check_keras_config(config, "k.h5")
    assert str(err.value).startswith("k.h5: layer 'tf.io.write_file' (TFOpLambda "
                                     "tf.io.write_file) writes files;")


def test_keras_files_from_other_sources(other_samples):
    for name in ("model.h5", "qat.h5", "pruned.h5", "model.keras", "custom.keras"):
        check_keras_config(read_keras_config(str(other_samples / name)), name)
    with pytest.raises(InputError, match=r"layer 'double' \(Lambda\) runs Python code"):
        check_keras_config(read_keras_config(str(other_samples / "lambda.h5")), "l")


@pytest.mark.parametrize("function,what", [
    ("nn.relu", None), ("math.add", None), ("reshape", None), ("concat", None),
    ("__operators__.getitem", None), ("strings.as_string", None), ("image.resize", None),
    ("io.read_file", "reads files"), ("io.matching_files", "reads files"),
    ("py_function", "runs Python code"), ("numpy_function", "runs Python code"),
    ("print", "prints"), ("summary.scalar", "writes summary files"),
    ("compat.v1.py_func", "runs Python code"),
    ("debugging.assert_equal", "runs a function it is given"),  # its tf.cond: not judged
    ("compat.v1.transpose", None), ("compat.v1.shape", None), ("compat.v1.nn.conv2d", None),
    ("compat.v1.Print", "prints"), ("compat.v1.io.write_file", "writes files"),
    ("compat.v1.summary.merge_all", "is not a pure"), ("saved_model.load", "reads or writes"),
    # raw ops that run a graph or function they are given, or read data, whatever their names
    ("raw_ops.DatasetFromGraph", "builds a data pipeline"),
    ("compat.v2.raw_ops.DatasetFromGraph", "builds a data pipeline"),
    ("raw_ops.DeserializeIterator", "builds a data pipeline"),
    ("raw_ops.InitializeTableFromDataset", "builds a data pipeline"),
    ("raw_ops.StatefulPartitionedCall", "runs a function it is given"),
    ("raw_ops.ReaderRead", "reads or writes files"),
    ("raw_ops.ExperimentalStatsAggregatorSummary", "builds a data pipeline"),
    ("raw_ops.TFRecordReaderV2", "reads files"), ("raw_ops.Relu", None),
])
def test_keras_function_classes(function, what):
    got = keras_function_use(function)
    assert got == what or (what and got.startswith(what))
    layer = {"class_name": "TFOpLambda", "config": {"name": "l", "function": function}}
    if what:
        with pytest.raises(InputError, match=r"layer 'l' \(TFOpLambda tf\."):
            check_keras_config({"config": {"layers": [layer]}}, "k.h5")
    else:
        check_keras_config({"config": {"layers": [layer]}}, "k.h5")
