"""TensorFlow's start-up chatter kept off stderr whenever it is first imported."""

from __future__ import annotations

import os
import subprocess
import sys


def test_tensorflow_imported_after_its_c_library_is_quiet():
    """The TensorFlow child loads TensorFlow's C library (which looks `tensorflow` up) before a
    call may import its Python API: that import is still quiet (it printed absl's and CUDA's
    lines before)."""
    program = ("from graphfreeze.process.quiet import quiet_when_imported\n"
               "from graphfreeze.graph import c_library\n"
               "quiet_when_imported()\n"
               "c_library.load()\n"
               "import tensorflow\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
