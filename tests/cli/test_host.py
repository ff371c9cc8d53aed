"""The `freeze` command touches nothing of the host's but its outputs: run in the model's folder
with a fresh HOME and a proxy that traps HTTP(S), every target leaves HOME empty and the trap
unvisited. (Libraries write there when imported, onnxruntime a device id, Keras a keras.json;
OpenVINO's converter also sends usage events: io/temporaries and graphfreeze/__init__.)"""

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
                              env=trap.proxied({**os.environ, "HOME": str(home)}))
    finally:
        trap.sock.close()
    assert done.returncode == 0, done.stderr
    assert any((folder / "out").iterdir())
    assert list(home.iterdir()) == [] and trap.hits == []
