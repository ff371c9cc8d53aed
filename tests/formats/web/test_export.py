"""The web targets end to end: `freeze` in the model's folder writes an ONNX model for
onnxruntime-web and a .tflite for LiteRT.js, each verified in a real headless Chromium against
the original; `freeze verify` runs the written artifact in the browser again. Without Chromium
or the npm runtime, one line naming what to install, and nothing written."""

from __future__ import annotations

import json

import pytest
from graphfreeze.formats.web.browser import CHROMIUM_ENV
from graphfreeze.formats.web.runtimes import CHECKOUT_MODULES, RUNTIMES_ENV

from tests.e2e.test_bad_input import assert_failed


def installed(package: str) -> str:
    return json.loads((CHECKOUT_MODULES / package / "package.json").read_text())["version"]


@pytest.fixture
def iris(sample, monkeypatch):
    folder = sample("iris")
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize("target,model,suffix,package", [
    ("web-onnx", "iris", ".onnx", "onnxruntime-web"),
    ("web-litert", "cnn_v2", ".tflite", "@litertjs/core"),
])
def test_the_browser_verifies_the_artifact_and_freeze_verify_runs_it_there_again(
        target, model, suffix, package, sample, freeze, monkeypatch):
    monkeypatch.chdir(sample(model))
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", target,
                  "-o", "out/", "--save-golden", "out/golden")
    assert done.exit_code == 0, done.output
    artifact = f"out/model.ckpt-200{suffix}"
    car = json.loads(open(f"{artifact}.json").read())
    assert car["format"] == "web" and car["verification"]["passed"]
    assert car["web"]["package"] == package and car["web"]["version"] == installed(package)
    assert car["web"]["backend"] == "wasm" and car["web"]["browser"].startswith("Chromium ")
    assert f"{package}@{installed(package)} (wasm)" in done.output

    again = freeze("verify", artifact, "--golden", "out/golden")
    assert again.exit_code == 0, again.output
    assert "passed against the golden inputs" in again.output
    # it ran in the browser: without Chromium, freeze verify cannot run it
    monkeypatch.setenv(CHROMIUM_ENV, "no-such-chromium")
    assert_failed(freeze("verify", artifact, "--golden", "out/golden"), 6,
                  "not found at no-such-chromium", "apt-get install chromium")


def test_without_chromium_one_line_names_what_to_install_and_nothing_is_written(
        iris, freeze, monkeypatch):
    monkeypatch.setenv(CHROMIUM_ENV, str(iris / "no-chromium-here"))
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "web-onnx",
                  "-o", "out/")
    assert_failed(done, 6, "headless Chromium, not found at", "apt-get install chromium",
                  CHROMIUM_ENV)
    assert not (iris / "out").exists() or not list((iris / "out").iterdir())


@pytest.mark.parametrize("target,package", [("web-onnx", "onnxruntime-web"),
                                            ("web-litert", "@litertjs/core")])
def test_without_the_npm_runtime_one_line_says_what_to_run(target, package, iris, freeze,
                                                           monkeypatch):
    monkeypatch.setenv(RUNTIMES_ENV, str(iris / "node_modules"))
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", target,
                  "-o", "out/")
    assert_failed(done, 6, f"browser runtime {package} is not installed", "make web",
                  RUNTIMES_ENV)
    assert not (iris / "out").exists() or not list((iris / "out").iterdir())
