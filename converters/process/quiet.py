"""Keep native libraries' start-up chatter (TensorFlow, TFLite, XNNPACK) off stderr.

TF 2.21 and TFLite print some lines from C++ before or outside TF_CPP_MIN_LOG_LEVEL's reach, so
while they run, file descriptor 2 points at /dev/null. Only when logs are off: the CLI sets
TF_CPP_MIN_LOG_LEVEL=3 unless --debug.
"""

from __future__ import annotations

import contextlib
import os
import warnings


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
    TF_CPP_MIN_LOG_LEVEL applies). Nothing to do when logs are on (--debug)."""
    if not logs_off():
        return
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    with native_stderr_off():
        import tensorflow as tf

        tf.config.list_physical_devices()
    tf.get_logger().setLevel("ERROR")
    tf.autograph.set_verbosity(0)
