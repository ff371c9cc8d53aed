"""Importing graphfreeze changes no environment variable and no other package's `sys.modules`
entry; a run sets up the environment TensorFlow, OpenVINO and onnxruntime read
(process/environment.py), a Python caller's as the CLI's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SET_UP = ("TF_USE_LEGACY_KERAS", "TF_CPP_MIN_LOG_LEVEL", "ORT_DISABLE_TELEMETRY")

IMPORTS = """
import json, os, sys
env, modules = dict(os.environ), dict(sys.modules)
import graphfreeze, graphfreeze.convert, graphfreeze.plugins, graphfreeze.registry
print(json.dumps({
    "env": sorted(k for k in {*env, *os.environ} if env.get(k) != os.environ.get(k)),
    "replaced": sorted(k for k, m in modules.items() if sys.modules.get(k) is not m),
    "blocked": sorted(k for k, m in sys.modules.items() if m is None),
}))
"""

RUN = """
import json, os, sys
from graphfreeze.convert import Request, convert
convert(Request(source="model.ckpt-200", outputs=("probs",), output=sys.argv[1], verify=False))
import tensorflow as tf
print(json.dumps({"env": {k: os.environ.get(k) for k in SET_UP},
                  "keras": tf.keras.__name__.split(".")[0],
                  "blocked": [k for k, m in sys.modules.items() if m is None]}))
""".replace("SET_UP", repr(SET_UP))


def _user_env() -> dict:
    """This environment less what graphfreeze's set-up sets (the test process has run it)."""
    return {k: v for k, v in os.environ.items() if k not in SET_UP}


def _json(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_graphfreeze_changes_nothing_of_the_process():
    done = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True,
                          env=_user_env(), timeout=120)
    assert _json(done) == {"env": [], "replaced": [], "blocked": []}


def test_a_python_callers_run_sets_the_environment_up(sample):
    folder = sample("cnn_v2")
    done = subprocess.run([sys.executable, "-c", RUN, "m.pb"], cwd=folder, capture_output=True,
                          text=True, env=_user_env(), timeout=300)
    assert _json(done) == {"env": {"TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
                                   "ORT_DISABLE_TELEMETRY": "1"},
                           "keras": "tf_keras", "blocked": ["openvino_telemetry"]}
    assert (folder / "m.pb").stat().st_size > 0


def test_the_callers_own_settings_stay():
    """A caller's TF_CPP_MIN_LOG_LEVEL (--debug's 0) and TF_USE_LEGACY_KERAS are kept."""
    program = ("import os\nfrom graphfreeze.process.environment import set_up\nset_up()\n"
               "print(os.environ['TF_CPP_MIN_LOG_LEVEL'], os.environ['TF_USE_LEGACY_KERAS'])")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**_user_env(), "TF_CPP_MIN_LOG_LEVEL": "0",
                               "TF_USE_LEGACY_KERAS": "0"}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0"]
