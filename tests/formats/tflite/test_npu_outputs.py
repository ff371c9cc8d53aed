"""An NPU target beside another .tflite target: its file name spells the target's parameter
safely (no `:`), and its compiled model, when it exists already, is refused without --force
before anything runs, with the other outputs. The vendor's SDK is stood in for by a package
of the SDK's name whose libraries folder exists (the real one downloads them at install)."""

from __future__ import annotations

import importlib

from tests.e2e.test_bad_input import assert_failed
from tests.formats.tflite.test_delegates import saved_model  # noqa: F401 -- the fixture


def test_an_existing_compiled_model_is_refused_up_front(saved_model, freeze, monkeypatch,  # noqa: F811
                                                         tmp_path):
    sdk = tmp_path / "sdk" / "ai_edge_litert_sdk_qualcomm"
    sdk.mkdir(parents=True)
    (sdk / "__init__.py").write_text("import pathlib\n\n\ndef path_to_sdk_libs():\n"
                                     "    return pathlib.Path(__file__).parent\n")
    monkeypatch.syspath_prepend(str(sdk.parent))
    importlib.invalidate_caches()
    monkeypatch.chdir(saved_model.parent)
    out = saved_model.parent / "npu"
    out.mkdir()
    compiled = out / "model.npu-qualcomm_SM8650.qualcomm_SM8650.tflite"
    compiled.write_bytes(b"compiled before")
    result = freeze("convert", "model", "--target", "tflite,npu-qualcomm:SM8650", "-o", "npu/")
    assert_failed(result, 4, f"npu/{compiled.name}: already exists", "--force")
    assert sorted(p.name for p in out.iterdir()) == [compiled.name]  # nothing ran
