"""The browser server: a port in use is one line naming it and the fix, and nothing is written."""

from __future__ import annotations

import socket

from graphfreeze.formats.web.browser import PORT_ENV

from tests.e2e.test_bad_input import assert_failed


def test_a_port_in_use_is_one_line_and_nothing_is_written(sample, freeze, monkeypatch):
    folder = sample("iris")
    monkeypatch.chdir(folder)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv(PORT_ENV, str(port))
        done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "web-onnx",
                      "-o", "out/")
    assert_failed(done, 6, f"127.0.0.1:{port} ({PORT_ENV}) is in use", f"unset {PORT_ENV}")
    assert not (folder / "out").exists() or not list((folder / "out").iterdir())


def test_a_port_that_is_no_port_is_one_line(sample, freeze, monkeypatch):
    folder = sample("iris")
    monkeypatch.chdir(folder)
    monkeypatch.setenv(PORT_ENV, "http")
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "web-onnx",
                  "-o", "out/")
    assert_failed(done, 6, f"{PORT_ENV}=http: not a port", "unset it")
    assert not (folder / "out").exists() or not list((folder / "out").iterdir())


def test_a_chromium_that_does_not_answer_is_one_line(sample, freeze, monkeypatch, tmp_path):
    """A `chromium` that fails to run (here: a file that is no program) names the variable."""
    broken = tmp_path / "chromium"
    broken.write_text("not a program\n")
    broken.chmod(0o755)
    folder = sample("iris")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("GRAPHFREEZE_CHROMIUM", str(broken))
    done = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "web-onnx",
                  "-o", "out/")
    assert done.exit_code not in (0, 1), done.output + done.stderr
    assert "GRAPHFREEZE_CHROMIUM" in done.stderr and "internal error" not in done.stderr
