"""Path spelling for local, `gs://` and `ram://` paths alike (no I/O, no TensorFlow)."""

from __future__ import annotations

import os
import posixpath


def gfile():
    """TensorFlow's file module (imported on first use: remote paths need it)."""
    import tensorflow as tf

    return tf.io.gfile


def is_remote(path: str) -> bool:
    return "://" in path


def join(*parts: str) -> str:
    return posixpath.join(*parts) if is_remote(parts[0]) else os.path.join(*parts)


def dirname(path: str) -> str:
    return posixpath.dirname(path) if is_remote(path) else os.path.dirname(path)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_remote(path) else os.path.basename(path)


def expand(path: str | None) -> str | None:
    """A path as the user meant it: `~` expanded for local paths; anything else kept as typed
    (relative paths stay relative, so messages and artifact names read as the user wrote them)."""
    return path if path is None or is_remote(path) else os.path.expanduser(path)


def expand_paths(options: dict, keys: set[str]) -> dict:
    """`options` with the paths among them (the option names in `keys`) expanded."""
    return {k: expand(v) if k in keys and isinstance(v, str) else v for k, v in options.items()}
