"""Keep native libraries' start-up chatter (TensorFlow, TFLite, XNNPACK) off stderr.

TF 2.21 and TFLite print some lines from C++ before or outside TF_CPP_MIN_LOG_LEVEL's reach, so
while they run, file descriptor 2 points at /dev/null. Only when logs are off: the environment's
set-up (process/environment.py) sets TF_CPP_MIN_LOG_LEVEL=3 unless the caller (--debug) set it.
"""

from __future__ import annotations

import contextlib
import importlib.util  # (here: the finder below must not import while it finds)
import os
import warnings

from graphfreeze.process.environment import set_up


def logs_off() -> bool:
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") == "3"


@contextlib.contextmanager
def native_stderr_off():
    """Redirect fd 2 to /dev/null inside the block, if logs are off."""
    if not logs_off():
        yield
        return
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def import_tensorflow_quietly() -> None:
    """Import TensorFlow with its C++ start-up chatter (oneDNN, CUDA probes) kept off stderr,
    and its Python loggers at errors only (TF 2.21 logs those through absl before
    TF_CPP_MIN_LOG_LEVEL applies), after the environment it reads is set up. Nothing more to do
    when logs are on (--debug)."""
    set_up()
    if not logs_off():
        return
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    with native_stderr_off():
        import tensorflow as tf

        tf.config.list_physical_devices()
    tf.get_logger().setLevel("ERROR")
    tf.autograph.set_verbosity(0)


def quiet_when_imported() -> None:
    """Have TensorFlow imported as `import_tensorflow_quietly` does whenever something first
    imports it (a run that needs it only in a stage, or never, does not wait for it up front),
    the environment it reads set up now."""
    import sys

    set_up()
    if not logs_off() or "tensorflow" in sys.modules or \
            any(isinstance(f, _QuietFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _QuietFinder())


class _QuietFinder:
    """Finds `tensorflow` with the other finders and wraps its loader; it leaves `sys.meta_path`
    when that loader runs (a lookup alone, `importlib.util.find_spec` finding the C library's
    folder, imports nothing)."""

    def __init__(self):
        import threading

        self._finding = threading.local()  # this thread's own lookup, under way

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow" or getattr(self._finding, "on", False):
            return None
        self._finding.on = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding.on = False
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader, self)
        return spec


class _QuietLoader:
    def __init__(self, inner, finder: _QuietFinder):
        self._inner, self._finder = inner, finder

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        import logging
        import sys

        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
        with native_stderr_off():
            self._inner.exec_module(module)
            module.config.list_physical_devices()
        module.get_logger().setLevel("ERROR")
        module.autograph.set_verbosity(0)
