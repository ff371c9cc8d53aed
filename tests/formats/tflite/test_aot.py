"""NPU targets (npu-<vendor>:<soc>): refused in one line without the vendor's SDK, for a SoC the
SDK does not know (did you mean), or with no SoC; LiteRT's AOT compiler run for real, failing
here as it must (no vendor SDK libraries on this machine)."""

from __future__ import annotations

import importlib.util

import pytest
from graphfreeze.errors import ConfigError, install_hint
from graphfreeze.formats.tflite import aot
from graphfreeze.registry import Registry, parse_target

from tests.e2e.test_bad_input import assert_failed
from tests.formats.tflite.test_delegates import saved_model  # noqa: F401 -- the fixture

NO_QUALCOMM = importlib.util.find_spec("ai_edge_litert_sdk_qualcomm") is None


@pytest.mark.skipif(not NO_QUALCOMM, reason="the Qualcomm SDK package is installed here")
def test_sdk_missing(saved_model, freeze, monkeypatch):  # noqa: F811
    monkeypatch.chdir(saved_model.parent)
    before = sorted(p.name for p in saved_model.parent.iterdir())
    assert_failed(freeze("convert", "model", "--target", "npu-qualcomm:SM8650"), 6,
                  "ai-edge-litert-sdk-qualcomm", install_hint("npu-qualcomm"))
    assert sorted(p.name for p in saved_model.parent.iterdir()) == before


@pytest.mark.parametrize("target,phrases", [
    ("npu-qualcomm:SM865", ("soc SM865", "did you mean SM8650?")),
    ("npu-mediatek:MT6898", ("soc MT6898", "did you mean MT6989?")),
    ("npu-qualcomm", ("name the SoC", "npu-qualcomm:<soc>")),
    ("tflite:SM8650", ("target 'tflite' takes no parameter",)),
])
def test_soc_refused(saved_model, freeze, monkeypatch, target, phrases):  # noqa: F811
    monkeypatch.chdir(saved_model.parent)
    assert_failed(freeze("convert", "model", "--target", target), 6, *phrases)


def test_soc_names_come_from_litert():
    from ai_edge_litert.aot.vendors.qualcomm.target import SocModel

    assert aot.socs("qualcomm") == [m.value for m in SocModel if m.value != "ALL"]
    target = Registry.default(plugins=False).target("npu-google-tensor:Tensor_G4")
    assert target.name == "npu-google-tensor:Tensor_G4"
    assert {"use": "compile_npu", "vendor": "google-tensor", "soc": "Tensor_G4"} in \
        [{"use": u.use, **u.options} for u in target.stages]


def test_a_parameter_no_stage_takes():
    with pytest.raises(ConfigError, match="parameter 'soc' is an option of none of its stages"):
        parse_target({"schema_version": 1, "name": "x", "description": "x", "parameter": "soc",
                      "stages": [{"use": "export_tflite"}]}, "x.toml")


def test_litert_compiler_runs_and_fails_here(tmp_path):
    """LiteRT's own AOT compiler (apply_plugin_main with the Qualcomm plugin) is run; without
    the QNN libraries the SDK download brings it cannot load, and says which library."""
    import tensorflow as tf

    fn = tf.function(lambda x: tf.nn.relu(x) * 2.0,
                     input_signature=[tf.TensorSpec([1, 4], tf.float32)])
    data = tf.lite.TFLiteConverter.from_concrete_functions(
        [fn.get_concrete_function()], fn).convert()
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=r"m.tflite: Qualcomm's NPU compiler cannot load its "
                                          r"SDK library \(libQnn"):
        aot.compile_model(str(path), "qualcomm", "SM8650", str(tmp_path / "out"), "m.tflite")
    placement = aot.placed(data, data, "")  # nothing compiled: every op stays on the CPU
    assert placement["npu_ops"] == 0 and placement["ops"] == len(placement["cpu"]) > 0
