"""The litert-lm targets through the `freeze` command, typed in the model's own folder: tiny
keras-hub GPT-2, Gemma and Llama (models/causal_lms.py) as LiteRT-LM .tflite files with
prefill_<T> and decode signatures, every weight type, verified by the tokens they generate
against Keras' own greedy `generate`; `freeze generate` on what they wrote; and the bad input a
user meets, each one line with nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FREEZE = str(Path(sys.executable).with_name("freeze"))
SMALL = ("--prefill-lengths", "8", "--prefill-lengths", "16", "--max-cache-len", "40",
         "--max-new-tokens", "12")


def _freeze(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([FREEZE, *args], cwd=folder, capture_output=True, text=True, env=env,
                          timeout=900)


def _model(causal_lms: Path, tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(causal_lms / name / "model.keras", folder)
    return folder


def _car(folder: Path, name: str) -> dict:
    return json.loads((folder / f"{name}.json").read_text())


def _keras_greedy(folder: Path, prompt: list[int], new: int) -> list[int]:
    """Keras' own greedy generation of the saved model, in a process of its own."""
    code = ("import json, sys, numpy as np, keras, keras_hub\n"
            "m = keras.models.load_model('model.keras')\n"
            "m.compile(sampler='greedy')\n"
            "p, n = json.loads(sys.argv[1]), int(sys.argv[2])\n"
            "ids = np.zeros([1, len(p) + n], 'int32'); ids[0, :len(p)] = p\n"
            "out = m.generate({'token_ids': ids, 'padding_mask': ids * 0 + (np.arange(len(p) + n)"
            " < len(p))}, stop_token_ids=None)\n"
            "print(json.dumps(np.asarray(out['token_ids'])[0, len(p):].tolist()))\n")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(prompt), str(new)], cwd=folder,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KERAS_BACKEND": "tensorflow",
                               "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_gpt2_float_targets_generate_the_originals_tokens(causal_lms, tmp_path):
    """float32 and fp16: a prefill signature per length and decode, the KV cache per layer in
    and out, identical tokens to Keras' greedy generation; `freeze generate` on the file gives
    what Keras gives for a prompt of its own."""
    folder = _model(causal_lms, tmp_path, "gpt2")
    done = _freeze(folder, "model.keras", "--target", "litert-lm,litert-lm-fp16", *SMALL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote model.litert-lm.tflite" in done.stdout, done.stdout
    for name in ("model.litert-lm.tflite", "model.litert-lm-fp16.tflite"):
        car = _car(folder, name)
        assert car["signatures"] == ["prefill_8", "prefill_16", "decode"]
        layout = car["layout"]
        assert (layout["layers"], layout["kv_heads"], layout["head_size"],
                layout["cache_len"], layout["vocab_size"]) == (2, 2, 16, 40, 96), layout
        check = car["verification"]
        assert check["passed"] and check["token_agreement"] == 1.0, check
        assert [p["prompt_tokens"] for p in check["prompts"]] == [4, 8, 16], check["prompts"]
    assert {d["name"] for d in car["inputs"]} == {"tokens", "input_pos", "kv_cache_k_0",
                                                  "kv_cache_v_0", "kv_cache_k_1", "kv_cache_v_1"}
    seen = _freeze(folder, "inspect", "model.litert-lm.tflite")
    assert seen.returncode == 0, seen.stderr[-2000:]
    assert "signature prefill_8: input_pos, kv_cache_k_0" in seen.stdout, seen.stdout
    assert "signature decode: input_pos" in seen.stdout and "-> kv_cache_k_0" in seen.stdout
    prompt = [40, 41, 42, 43, 44]
    made = _freeze(folder, "generate", "model.litert-lm.tflite", "--prompt-ids",
                   ",".join(map(str, prompt)), "--max-new-tokens", "6", "--json")
    assert made.returncode == 0, made.stderr[-2000:]
    assert json.loads(made.stdout)["tokens"] == _keras_greedy(folder, prompt, 6)


@pytest.mark.parametrize("name", ["gemma", "llama"])
def test_quantized_weights_meet_the_token_agreement(causal_lms, tmp_path, name):
    """int8 (per channel) and int4 (blocks of 32) by ai-edge-quantizer: smaller files whose
    generated tokens meet the targets' default agreement; logits |diff| reported per target."""
    folder = _model(causal_lms, tmp_path, name)
    done = _freeze(folder, "model.keras", "--target", "litert-lm,litert-lm-int8,litert-lm-int4",
                   *SMALL)
    assert done.returncode == 0, done.stderr[-3000:]
    float_size = _car(folder, "model.litert-lm.tflite")["bytes"]
    for target in ("litert-lm-int8", "litert-lm-int4"):
        car = _car(folder, f"model.{target}.tflite")
        assert car["bytes"] < float_size, (target, car["bytes"], float_size)
        check = car["verification"]
        assert check["passed"] and check["token_agreement"] >= 0.5, check
        assert check["metrics"]["logits"]["max_abs_diff"] > 0, check
    assert _car(folder, "model.litert-lm-int4.tflite")["block_size"] == 32


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_onnx_lm_takes_past_key_values_and_generates_the_originals_tokens(causal_lms, tmp_path,
                                                                          name):
    """onnx-lm: one graph for the prompt and each new token, onnxruntime-genai's names
    (past_key_values.<i>.key/value in, present.<i>.key/value out, [1, kv heads, cache, size]),
    identical tokens to Keras' generate in onnxruntime; `freeze generate` runs it too."""
    folder = _model(causal_lms, tmp_path, name)
    done = _freeze(folder, "model.keras", "--target", "onnx-lm", "--max-cache-len", "40",
                   "--max-new-tokens", "12")
    assert done.returncode == 0, done.stderr[-3000:]
    car = _car(folder, "model.onnx")
    assert car["verification"]["passed"] and car["verification"]["token_agreement"] == 1.0
    names = {d["name"]: d["shape"] for d in car["inputs"]}
    layout = car["layout"]
    assert names["past_key_values.1.value"] == [1, layout["kv_heads"], 40, layout["head_size"]]
    assert {"input_ids", "position_ids"} <= set(names)
    assert {d["name"] for d in car["outputs"]} >= {"logits", "present.0.key", "present.1.value"}
    made = _freeze(folder, "generate", "model.onnx", "--prompt-ids", "7,8,9", "--json")
    assert made.returncode == 0, made.stderr[-2000:]
    assert json.loads(made.stdout)["tokens"][:4] == _keras_greedy(folder, [7, 8, 9], 4)


def _refused(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode not in (0, 1), done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and all(w in lines[0] for w in words), done.stderr[-3000:]


def test_bad_input_is_one_line_and_nothing_written(causal_lms, keras_layers, tmp_path):
    folder = _model(causal_lms, tmp_path, "gpt2")
    before = sorted(p.name for p in folder.iterdir())
    # the cache shorter than a prefill length
    _refused(_freeze(folder, "model.keras", "--target", "litert-lm", "--prefill-lengths", "32",
                     "--max-cache-len", "16"), "--max-cache-len", "32")
    # no room for the verification's new tokens
    _refused(_freeze(folder, "model.keras", "--target", "litert-lm", "--prefill-lengths", "8",
                     "--max-cache-len", "16", "--max-new-tokens", "16"), "--max-new-tokens")
    # a longer cache than the model has positions (GPT-2: 256)
    _refused(_freeze(folder, "model.keras", "--target", "litert-lm", "--max-cache-len", "512"),
             "256")
    # int4 blocks of 128 along the tiny model's 32-wide weights
    _refused(_freeze(folder, "model.keras", "--target", "litert-lm-int4", "--block-size", "128",
                     "--prefill-lengths", "8", "--max-cache-len", "16", "--max-new-tokens", "4"),
             "block size 128", "--block-size 32")
    assert sorted(p.name for p in folder.iterdir()) == before
    # a model that is not a causal LM
    cnn = tmp_path / "cnn"
    cnn.mkdir()
    shutil.copy(keras_layers / "keras3.keras", cnn / "model.keras")
    _refused(_freeze(cnn, "model.keras", "--target", "litert-lm"), "not a causal language model",
             "--target tflite")
    assert sorted(p.name for p in cnn.iterdir()) == ["model.keras"]
    # a SavedModel keeps no cached forward pass to trace
    shutil.copytree(keras_layers / "keras3_savedmodel", tmp_path / "exported")
    _refused(_freeze(tmp_path, "exported", "--target", "litert-lm"), "exported", ".keras file")
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".tflite", ".json")]


def test_generate_refuses_what_it_cannot_run(causal_lms, tmp_path, keras_layers):
    folder = _model(causal_lms, tmp_path, "gpt2")
    done = _freeze(folder, "model.keras", "--target", "litert-lm,tflite", "--no-verify",
                   "--prefill-lengths", "8", "--max-cache-len", "16")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not _car(folder, "model.litert-lm.tflite").get("verification")  # --no-verify
    (folder / "golden").mkdir()
    _refused(_freeze(folder, "verify", "model.litert-lm.tflite", "--golden", "golden"),
             "verified by generation", "freeze generate model.litert-lm.tflite")
    _refused(_freeze(folder, "generate", "model.litert-lm.tflite", "--prompt-ids", "1,500"),
             "500", "vocabulary")
    _refused(_freeze(folder, "generate", "model.litert-lm.tflite", "--prompt-ids", "a"),
             "integers")
    _refused(_freeze(folder, "generate", "model.litert-lm.tflite", "--prompt-ids", "1,2",
                     "--max-new-tokens", "15"), "2 tokens and 15 new", "cache of 16")
    _refused(_freeze(folder, "generate", "model.tflite", "--prompt-ids", "1,2"),
             "does not generate")
    _refused(_freeze(folder, "generate", "nothing.tflite", "--prompt-ids", "1"), "no sidecar")
    (folder / "broken.tflite").write_bytes(b"not a flatbuffer")  # beside a litert-lm sidecar
    shutil.copy(folder / "model.litert-lm.tflite.json", folder / "broken.tflite.json")
    _refused(_freeze(folder, "generate", "broken.tflite", "--prompt-ids", "1"), "broken.tflite",
             "LiteRT")
