"""One exception hierarchy; every message names the file or node at fault and the fix.

Exit codes (documented in the README):
  1  unexpected internal error          2  command-line usage (click)
  3  bad input model or name            4  output exists or cannot be written
  5  verification mismatch              6  target / stage / plugin configuration
"""


class GraphFreezeError(Exception):
    """Base class: `str(err)` is the one line the CLI prints."""

    exit_code = 1


class InputError(GraphFreezeError):
    """The model files or the names asked for are wrong."""

    exit_code = 3


class OutputError(GraphFreezeError):
    """An output exists (without --force) or cannot be written."""

    exit_code = 4


class VerificationError(GraphFreezeError):
    """The converted model's outputs differ from the original's beyond tolerance. `details`:
    lines saying where it diverges; `divergence`: the same as data."""

    exit_code = 5
    details: list[str] = []
    divergence: dict | None = None


class ConfigError(GraphFreezeError):
    """A target, stage, option or plugin is malformed or unknown."""

    exit_code = 6


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (TensorFlow's `.message` if it has one), or its
    type's name: what goes inside our one-line errors."""
    text = (getattr(err, "message", None) or str(err)).strip()
    return text.splitlines()[0] if text else type(err).__name__
