"""graphfreeze: freeze TensorFlow models into clean, verified, device-ready artifacts.

Importing it sets the environment TensorFlow reads when it is first imported (so the CLI, a
Python caller and a worker process all get the same): tf.keras is tf_keras (Keras 2, what
tensorflow-model-optimization needs; `.keras` files load with Keras 3 itself), and TensorFlow's
C++ logs are quiet unless the caller set TF_CPP_MIN_LOG_LEVEL. OpenVINO's and onnxruntime's
telemetry are off (when imported after graphfreeze).
"""

import os
import sys

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it: declared once)

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# OpenVINO's converter sends usage events to Google Analytics (from forked processes) and keeps
# a client id and counts in ~/intel unless the user opted out. With the module unimportable it
# uses its own no-op stub, as when openvino-telemetry is not installed: nothing leaves the host.
sys.modules.setdefault("openvino_telemetry", None)
# onnxruntime (1.29 on) uploads usage events to Microsoft on Linux too, from a thread it starts
# when imported (and keeps a session file and a database); this switch, read then, stops it.
# Set whatever the caller's environment says: nothing graphfreeze runs reaches the network.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
