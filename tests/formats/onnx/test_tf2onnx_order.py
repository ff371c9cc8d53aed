"""One graph, one ONNX file: tf2onnx's loop rewriter found a v1 while loop's variables in set
order (string hashes, memory addresses), so two runs could write two different Loops."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FREEZE = str(Path(sys.executable).with_name("freeze"))


def test_a_while_loop_converts_to_the_same_bytes_whatever_the_hash_seed(zoo, tmp_path):
    """Hash seeds 1 and 3 ordered the Loop's carried values differently before."""
    path, args = zoo("while_loop")
    written = []
    for seed in ("1", "3"):
        out = tmp_path / f"seed{seed}.onnx"
        done = subprocess.run([FREEZE, path.name, *args, "--target", "onnx", "-o", str(out)],
                              cwd=path.parent, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        written.append(out.read_bytes())
    assert written[0] == written[1]
