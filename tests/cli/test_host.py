"""The `freeze` command touches nothing of the host's but its outputs: run in the model's folder
with a fresh HOME and a proxy that traps HTTP(S), every target leaves HOME empty and the trap
unvisited. (Libraries write there when imported, onnxruntime a device id, Keras a keras.json;
OpenVINO's converter and onnxruntime also send usage events: io/temporaries and
process/environment.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ..network_trap import Trap

CASES = {  # name: (fixture, model, arguments)
    **{target: ("samples", "cnn_v2", ["--ckpt", "model.ckpt-200", "--outputs", "probs",
                                      "--target", target])
       for target in ("android", "server", "tflite", "onnx", "openvino")},
    "openvino read from a SavedModel": ("source_cases", "tf1_savedmodel",
                                        [".", "--target", "openvino"]),
    "tflite from a .keras file": ("other_samples", "model.keras",
                                  ["model.keras", "--target", "tflite"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_run_leaves_home_empty_and_reaches_no_network(request, tmp_path, case):
    fixture, model, args = CASES[case]
    source = request.getfixturevalue(fixture) / model
    folder = tmp_path / "model"
    if source.is_dir():
        shutil.copytree(source, folder)
    else:
        folder.mkdir()
        shutil.copy(source, folder)
    home = tmp_path / "home"
    home.mkdir()
    trap = Trap()
    try:
        done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", *args, "-o", "out/"],
                              cwd=folder, capture_output=True, text=True,
                              env=trap.proxied(users(home)))
    finally:
        trap.sock.close()
    assert done.returncode == 0, done.stderr
    assert any((folder / "out").iterdir())
    assert list(home.iterdir()) == [] and trap.hits == []


def users(home) -> dict:
    """The environment a user's shell gives: this one's, less what graphfreeze's set-up set."""
    return {**{k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"},
            "HOME": str(home)}


SESSION = """
import sys, time
from graphfreeze.process.environment import set_up
set_up()  # as a run does before it imports onnxruntime
import numpy as np, onnxruntime
from onnx import TensorProto, helper
x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "xy")
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
session = onnxruntime.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
session.run(None, {"x": np.ones(1, np.float32)})
time.sleep(float(sys.argv[1]))
"""


def test_onnxruntime_uploads_nothing_however_long_it_runs(tmp_path):
    """onnxruntime (1.29 on) starts an uploader of usage events on Linux, which first tries ~9 s
    after import here; a run verifying a big model lives that long."""
    trap = Trap()
    try:
        done = subprocess.run([sys.executable, "-c", SESSION, "14"], cwd=tmp_path,
                              capture_output=True, text=True, env=trap.proxied(users(tmp_path)))
    finally:
        trap.sock.close()
    assert done.returncode == 0, done.stderr
    assert trap.hits == [] and list(tmp_path.iterdir()) == []
