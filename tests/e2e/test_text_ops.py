"""TF-Text tokenizer SavedModels (models/families_text.py) through the real CLI: their ops load
from tensorflow-text, reach TFLite as TF-Text custom ops and ONNX as onnxruntime-extensions
ops, each verified by `freeze` on seeded strings, and each artifact, run by graphfreeze's own
runtime for its format, gives the original's outputs on the strings below as well."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.e2e.installs import ROOT, user_env

TEXT = np.array([b"the cat sat", b"a big red dogs running on mat", b"Dogs SAT!"], dtype=object)


def reference(path) -> dict:
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 -- the model's ops

    result = tf.saved_model.load(str(path)).signatures["serving_default"](text=tf.constant(TEXT))
    return {k: v.numpy() for k, v in result.items()}


def converted(family, freeze, monkeypatch, tmp_path, name: str, targets: str) -> dict:
    """FAMILY model NAME converted to TARGETS in its folder; {target: (artifact, sidecar)}."""
    path, args = family(name)
    monkeypatch.chdir(path.parent)
    out = tmp_path / "out"
    result = freeze(path.name, *args, "--target", targets, "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    found = {}
    for car in out.glob("*.json"):
        data = json.loads(car.read_text())
        assert data["verification"]["passed"], data["verification"]
        found[data["target"]] = (out / data["file"], data)
    assert sorted(found) == sorted(targets.split(",")), sorted(found)
    return found


def same_outputs(fmt: str, artifact, sidecar: dict, expected: dict) -> None:
    """The artifact, run by graphfreeze's runtime for FMT, gives the original's outputs."""
    from graphfreeze.registry import Registry
    from graphfreeze.tensors import TensorInfo

    infos = [[TensorInfo(t["name"], t["dtype"], t["shape"]) for t in sidecar[role]]
             for role in ("inputs", "outputs")]
    session = Registry.default(plugins=False).format(fmt).open(str(artifact), *infos, untrusted=True)
    got = session.run({infos[0][0].name: TEXT})
    for info, value in zip(infos[1], got, strict=True):
        want = expected[info.name.rsplit(":", 1)[0]]
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=f"{fmt} {info.name}")


def test_bert_tokenizer_to_android_tflite_and_int8(family, freeze, monkeypatch, tmp_path):
    found = converted(family, freeze, monkeypatch, tmp_path, "tftext_bert",
                      "android,tflite,edge-int8")
    expected = reference(family("tftext_bert")[0])
    (pb, android), (lite, tflite) = found["android"], found["tflite"]
    assert android["op_libraries"] == ["tensorflow-text"]
    assert {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"} <= set(android["library_ops"])
    assert set(tflite["custom_ops"]) == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets",
                                         "RaggedTensorToTensor"}
    same_outputs("frozen_graph", pb, android, expected)
    same_outputs("tflite", lite, tflite, expected)  # LiteRT with TF-Text's kernels registered
    # int8 calibrated in LiteRT on seeded strings (TFLite's calibrator crashes on them): the
    # tokens exact, the score's head quantized
    int8 = found["edge-int8"][1]
    assert int8["quantize"] == "int8" and int8["verification"]["max_abs_diff"]["ids:0"] == 0
    assert int8["tflite_io"]["inputs"]["text"]["dtype"] == "bytes_"


def test_sentencepiece_to_server_and_onnx(family, freeze, monkeypatch, tmp_path):
    """The SentencePiece model a TF2 function captures is frozen in as its SentencepieceOp."""
    found = converted(family, freeze, monkeypatch, tmp_path, "tftext_sentencepiece",
                      "server,onnx")
    expected = reference(family("tftext_sentencepiece")[0])
    (folder, server), (model, onnx) = found["server"], found["onnx"]
    assert server["op_libraries"] == ["tensorflow-text"]
    assert onnx["op_libraries"] == ["onnxruntime-extensions"]
    assert onnx["custom_ops"] == ["SentencepieceTokenizer"]
    same_outputs("saved_model", folder, server, expected)
    same_outputs("onnx", model, onnx, expected)  # onnxruntime with onnxruntime-extensions


def test_sentencepiece_to_tflite_names_the_op_and_what_takes_it(family, freeze, monkeypatch,
                                                                 tmp_path):
    from tests.e2e.test_bad_input import assert_failed

    path, _ = family("tftext_sentencepiece")
    monkeypatch.chdir(path.parent)
    result = freeze(path.name, "--target", "tflite", "--no-verify", "-o", f"{tmp_path}/")
    assert_failed(result, 3, "TF-Text op 'SentencepieceOp'", "no kernel", "FastSentencepieceTokenizer",
                  "android, onnx or server target")
    assert not list(tmp_path.glob("*.tflite*"))


BASE_PYTHON = ROOT / ".venv-base" / "bin" / "python"


@pytest.mark.skipif(not BASE_PYTHON.exists(), reason="no .venv-base (make .venv-base)")
def test_tokenizer_without_tensorflow_text_names_the_extra(family, tmp_path):
    """The base install has TensorFlow but not tensorflow-text: this checkout's code, run in it,
    refuses the model in one line naming the op and the `text` extra (exit 6)."""
    path, _ = family("tftext_bert")
    code = tmp_path / "code"
    code.mkdir()
    os.symlink(ROOT / "converters", code / "graphfreeze")
    os.symlink(ROOT / "cli", code / "graphfreeze_cli")
    done = subprocess.run(
        [str(BASE_PYTHON), "-c", "import sys; from graphfreeze_cli.main import main; "
         "sys.exit(main())", path.name, "--target", "android", "-o", f"{tmp_path}/out.pb"],
        cwd=path.parent, capture_output=True, text=True, timeout=300,
        env=user_env(PYTHONPATH=str(code)))
    assert done.returncode == 6, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "FastBertNormalize" in line and "-m pip install '" in line and "[text]'" in line, line
    assert not (tmp_path / "out.pb").exists()
    assert sys.executable != str(BASE_PYTHON)
