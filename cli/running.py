"""Running a command's action: one line per error with the documented exit code, signals
(Ctrl-C, SIGTERM, SIGHUP) unwound so nothing half-written is left."""

from __future__ import annotations

import sys

import click
from graphfreeze.errors import GraphFreezeError, first_line


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP: unwound like Ctrl-C, so temporaries are removed and nothing is written."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop_on(signum, frame) -> None:
    raise Stopped(signum)


def run(action, debug: bool) -> None:
    import signal

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop_on)
    try:
        action()
    except GraphFreezeError as err:
        if debug:
            raise
        for line in getattr(err, "details", ()):  # e.g. where a verification diverged
            click.echo(line, err=True)
        click.echo(f"error: {err}", err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt as err:
        click.echo("interrupted; nothing written", err=True)
        sys.exit(128 + getattr(err, "signum", 2))
    except Exception as err:  # a bug: one line, the traceback with --debug
        if debug:
            raise
        click.echo(f"internal error: {type(err).__name__}: {first_line(err)} (rerun with --debug)",
                   err=True)
        sys.exit(1)


def quiet_tensorflow(debug: bool) -> None:
    if not debug:
        from graphfreeze.quiet import import_tensorflow_quietly

        import_tensorflow_quietly()
