"""cli/running: a stop signal a library swallowed and printed still ends the run in one line."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
from graphfreeze_cli import running


def test_a_stop_a_library_prints_and_swallows_is_one_line(capsys):
    """numpy's import_array (in onnxruntime's import) catches a Ctrl-C raised in Python code it
    called, prints it with PyErr_Print (which calls sys.excepthook) and raises ImportError."""
    def action():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt as err:
            sys.excepthook(type(err), err, err.__traceback__)  # what PyErr_Print does
            raise ImportError("numpy.core.multiarray failed to import") from None

    hook = sys.excepthook
    with pytest.raises(SystemExit) as stop:
        running.run(action, debug=False, private_tmp=False)
    assert stop.value.code == 128 + signal.SIGINT
    assert capsys.readouterr().err == "interrupted; nothing written\n"
    assert sys.excepthook is hook  # the caller's back


def test_a_stop_in_a_finalizer_is_one_line(capsys, monkeypatch):
    """A signal that arrives while a `__del__` runs raises there, where Python cannot unwind it
    (it goes to sys.unraisablehook: "Exception ignored in ..." on stderr): the run still stops,
    saying one line, and the hook hears nothing of it."""
    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # the handler runs here, inside the finalizer

    def action():
        Finalized()  # dropped at once: its __del__ runs, the Stopped is unraisable
        time.sleep(0.1)

    heard = []
    monkeypatch.setattr(sys, "unraisablehook", heard.append)
    with pytest.raises(SystemExit) as stop:
        running.run(action, debug=False, private_tmp=False)
    assert stop.value.code == 128 + signal.SIGINT
    assert capsys.readouterr().err == "interrupted; nothing written\n"
    assert heard == [] and sys.unraisablehook == heard.append  # the caller's back
