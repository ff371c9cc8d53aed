"""issue 14: TFLite artifacts of the models users ship. Models whose ops the converter fixed to
the shape it converted at (Flatten/Reshape to [1, N], XNNPack refusing to resize) verify row
by row at that shape; a graph with no placeholder converts; an artifact LiteRT cannot run is
one line naming the file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from graphfreeze.errors import InputError
from graphfreeze.formats.tflite import export as tflite
from graphfreeze.formats.tflite import interpreter as tflite_runtime
from graphfreeze.formats.tflite.export import TFLiteOptions
from graphfreeze.tensors import TensorInfo, sample_inputs

from tests.formats.tflite.test_export import export, graph_state


def converted(zoo, freeze, tmp_path, name: str, targets: str) -> dict:
    """{target: its sidecar} after converting zoo model NAME to TARGETS (exit 0 asserted)."""
    path, args = zoo(name)
    out = tmp_path / "out"
    result = freeze(path, *args, "--target", targets, "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    cars = {}
    for car in out.glob("*.json"):
        data = json.loads(car.read_text())
        cars[data["target"]] = data
    assert sorted(cars) == sorted(targets.split(",")), sorted(cars)
    return cars


@pytest.mark.parametrize("name,targets", [
    ("cnn_flatten", "tflite,edge-int8"),  # Flatten + Dense: XNNPack failed to reshape
    ("gan_generator", "tflite"),  # Dense -> Reshape -> Conv2DTranspose
    ("ecg_conv1d", "tflite"),  # 1-D convolutions
])
def test_fixed_shape_models_verify_at_the_shape_they_have(zoo, freeze, tmp_path, name, targets):
    for target, car in converted(zoo, freeze, tmp_path, name, targets).items():
        check = car["verification"]
        assert check["passed"], (target, check)
        # the seeded batch (2, or edge-int8's 32) ran row by row, every row compared
        assert check["batch_size"] == (32 if target == "edge-int8" else 2), check
        io = car["tflite_io"]["inputs"]
        assert all(spec["shape"][0] == 1 for spec in io.values()), io


def test_a_graph_with_no_placeholder_converts_to_every_target(zoo, freeze, tmp_path):
    """freeze_graph's testFreezeGraphV2: output = variable * 2, no input at all."""
    cars = converted(zoo, freeze, tmp_path, "no_placeholder", "android,tflite,onnx,edge-int8")
    for target, car in cars.items():
        assert car["verification"]["passed"], (target, car["verification"])
        assert car["inputs"] == [], (target, car["inputs"])
    assert cars["tflite"]["tflite_io"]["inputs"] == {}
    assert not any("synthetic" in w for w in cars["edge-int8"].get("warnings", []))


@pytest.fixture(scope="module")
def iris(samples):
    return graph_state(samples / "iris")


def test_an_artifact_litert_cannot_run_is_one_line(iris, tmp_path):
    """Feeds the interpreter cannot take (here a wrong inner dim) are an ArtifactRunError whose
    text is the interpreter's first line; rows are only tried where the rest of the shape fits."""
    from graphfreeze.tensors import io_infos

    path = tmp_path / "iris.tflite"
    path.write_bytes(tflite.convert(iris, TFLiteOptions(), io_infos(iris)[0]))
    with pytest.raises(tflite_runtime.ArtifactRunError) as err:
        tflite_runtime.run_batched(str(path), {"x": np.zeros((2, 5), np.float32)}, dict)
    assert "\n" not in str(err.value) and str(err.value)
    done, batch = export(iris, tflite.run, TFLiteOptions(), tmp_path / "out.tflite", "tflite")
    with batch:
        assert done.artifact.open().run(sample_inputs(done.artifact.inputs, 3, 0))[0].shape == (3, 3)


def test_unknown_rank_suggests_a_shape_that_keeps_verification():
    with pytest.raises(InputError, match=r"input 'x:0' has unknown rank.*--inputs 'x\[1,4\]'.*"
                                         r"or pass --no-verify"):
        sample_inputs([TensorInfo("x:0", "float32", None)], 2, 0)


def test_recurrent_models_convert_and_int8_calibration_is_refused(zoo, freeze, tmp_path):
    """A Keras 3 LSTM's TensorLists get static element shapes, so tflite and tflite-dynamic
    convert and verify; TFLite's int8 calibrator crashes on loops, so edge-int8 is one line."""
    cars = converted(zoo, freeze, tmp_path, "lstm_addition", "tflite,tflite-dynamic")
    assert all(car["verification"]["passed"] for car in cars.values())
    path, args = zoo("lstm_addition")
    for target in ("edge-int8", "edge-int16x8"):  # 16x8's calibrator crashes on loops too
        result = freeze(path, *args, "--target", target, "-o", f"{tmp_path}/int8/")
        assert result.exit_code == 3
        assert "recurrent loop" in result.output and "tflite-dynamic" in result.output
        assert not (tmp_path / "int8").exists()
