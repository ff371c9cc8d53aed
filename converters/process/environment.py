"""The environment the libraries graphfreeze runs read when first imported, set by `set_up()`:
called by the CLI at start, by `convert.prepare`/`execute` (a Python caller's run), and where
graphfreeze first imports TensorFlow (`process/quiet`: the CLI's stages, the TensorFlow child,
batch workers). Importing graphfreeze sets none of it: a program that imports graphfreeze keeps
its own environment and `sys.modules` until it runs something."""

from __future__ import annotations

import os
import sys


def set_up() -> None:
    """tf.keras is tf_keras (Keras 2, what tensorflow-model-optimization needs; `.keras` files
    load with Keras 3 itself) and TensorFlow's C++ logs are quiet, unless the caller set either;
    OpenVINO's and onnxruntime's telemetry are off (for what is imported after this)."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # OpenVINO's converter sends usage events to Google Analytics (from forked processes) and
    # keeps a client id and counts in ~/intel unless the user opted out. With the module
    # unimportable it uses its own no-op stub, as when openvino-telemetry is not installed.
    sys.modules.setdefault("openvino_telemetry", None)
    # onnxruntime (1.29 on) uploads usage events to Microsoft on Linux too, from a thread it
    # starts when imported (and keeps a session file and a database); this switch, read then,
    # stops it. Set whatever the caller's environment says: nothing graphfreeze runs reaches
    # the network.
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
