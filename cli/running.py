"""Running a command's action: one line per error with the documented exit code; Ctrl-C,
SIGTERM and SIGHUP at any moment unwound so nothing half-written is left (exit 128+signal), or,
once every file is committed, exit 0; a closed stdout pipe (`freeze targets | head -1`) ends the
command quietly with exit 0."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys

import click
from graphfreeze.errors import GraphFreezeError, first_line

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PROGRAM = False  # set by `freeze` run as a program: its handlers stay until the process ends


class UsageRefused(GraphFreezeError):
    """A command line that cannot run as given, found as the command runs (its one line says
    what to add): exit 2, as click's usage errors."""

    exit_code = 2


class Stopped(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP: unwound like Ctrl-C, so temporaries are removed and nothing is
    written."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _Signals:
    received: int | None = None  # the first stop signal of this run
    done = False  # every file committed (or nothing to write and the work finished)


_state = _Signals()


def _on_signal(signum, frame) -> None:
    if _state.received is None:
        _state.received = signum
    if not _state.done:  # before the commit: unwind (a second signal too: cleanups defer them)
        raise Stopped(signum)


def committing() -> None:
    """Called as the files are about to be renamed into place (`convert.execute(on_commit=)`):
    a signal that already arrived (and was swallowed by a library: onnxruntime turns Ctrl-C
    during its import into an ImportError) stops the run now; any later one ends it with exit 0,
    every file written."""
    if _state.received is not None:
        raise Stopped(_state.received)
    _state.done = True


def stop_signal() -> int | None:
    """The stop signal that arrived during this run, if any."""
    return _state.received


def run(action, debug: bool, private_tmp: bool = True) -> None:
    """Run `action()` (printing what it made) as a command: errors, signals and pipes as the
    module says. With `private_tmp`, temporary files go to a folder removed at the end."""
    saved = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    _state.received, _state.done = None, False
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_signal)
    sys.excepthook, hook = _stops_unprinted(sys.excepthook), sys.excepthook
    sys.unraisablehook, unraisable = _stops_unraised(sys.unraisablehook), sys.unraisablehook
    try:
        if private_tmp:
            _run(lambda: _in_private_tmp(action), debug)
        else:
            _run(action, debug)
    finally:
        if PROGRAM:  # the rest of the process (exit, atexit): a signal no longer undoes anything
            _state.done = True
        else:  # called in-process (tests, an embedding program): its own handlers back
            sys.excepthook, sys.unraisablehook = hook, unraisable
            for signum, handler in saved.items():
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _stops_unprinted(hook):
    """`hook`, except for a Stopped: a library that swallows one (numpy's import_array, in
    onnxruntime's import, turns it into an ImportError) prints it with `PyErr_Print`, which
    calls sys.excepthook; the run still stops, at `committing` or the end (one line)."""
    def excepthook(kind, value, traceback) -> None:
        if not isinstance(value, Stopped):
            hook(kind, value, traceback)
    return excepthook


def _stops_unraised(hook):
    """`hook`, except for a Stopped: one raised in a finalizer (a `__del__` running as the
    signal came) cannot unwind the run, which Python reports as "Exception ignored in ...";
    the run still stops, at `committing` or the end (one line)."""
    def unraisablehook(unraisable) -> None:
        if not isinstance(unraisable.exc_value, Stopped):
            hook(unraisable)
    return unraisablehook


def _run(action, debug: bool) -> None:
    try:
        with closed_pipe_ok():
            action()
            sys.stdout.flush()
    except SystemExit:
        raise
    except BaseException as err:  # noqa: BLE001 -- each kind below has its exit code
        signum = _state.received
        if signum is not None and not _state.done or isinstance(err, KeyboardInterrupt):
            _interrupted(signum or getattr(err, "signum", signal.SIGINT))
        if isinstance(err, GraphFreezeError):
            if debug:  # the traceback, and still the exit code that says what kind of error
                import traceback

                traceback.print_exc()
            for line in getattr(err, "details", ()):  # e.g. where a verification diverged
                click.echo(line, err=True)
            click.echo(f"error: {err}", err=True)
            sys.exit(err.exit_code)
        if debug or not isinstance(err, Exception):
            raise
        click.echo(f"internal error: {type(err).__name__}: {first_line(err)} (rerun with --debug)",
                   err=True)
        sys.exit(1)
    if _state.received is not None and not _state.done:  # the signal was swallowed on the way
        _interrupted(_state.received)


def _in_private_tmp(action) -> None:
    from graphfreeze.io.temporaries import private_tempdir

    with private_tempdir():
        action()


def _interrupted(signum: int) -> None:
    _state.done = True  # unwound: a further signal changes nothing
    with contextlib.suppress(OSError):
        click.echo("interrupted; nothing written", err=True)
    sys.exit(128 + signum)


@contextlib.contextmanager
def closed_pipe_ok():
    """A reader that went away (`| head -1`) is no error: stdout goes to /dev/null (so the final
    flush at exit cannot fail either) and the command ends with exit 0."""
    try:
        yield
    except OSError as err:
        if err.errno != errno.EPIPE:
            raise
        stdout_gone()
        sys.exit(0)


def stdout_gone() -> None:
    """Point stdout at /dev/null (its reader closed the pipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def quiet_tensorflow(debug: bool) -> None:
    if not debug:
        from graphfreeze.process.quiet import import_tensorflow_quietly

        import_tensorflow_quietly()
