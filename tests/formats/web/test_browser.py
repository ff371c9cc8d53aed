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
