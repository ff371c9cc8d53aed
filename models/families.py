"""The second zoo (issue 24): the model families users ship that models/zoo.py does not cover
(keras-hub backbones and causal LMs, detectors with each NMS variant, TF-Text tokenizers, string
and ragged inputs, lookup tables, attention vision nets), small and seeded, nothing downloaded.
Each `models/families_*.py` module has `builders()`, as the zoo's modules do; each model is
tried on every target (a refusal is a cell with its one line); a module with
`FIXTURES_ONLY = True` (models made to fail, for `freeze reduce`'s tests) is built on request but
left out of --list, so out of the coverage run.

    python models/families.py OUT_DIR [--only NAME,NAME] [--list]

writes OUT_DIR/NAME/ with the model and its zoo.json, in models/zoo.py's format.
"""

from __future__ import annotations

import glob
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zoo  # noqa: E402

MODULES = tuple(importlib.import_module(os.path.basename(p)[:-3]) for p in sorted(
    glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "families_*.py"))))

# every family is tried on every target of the zoo's table: a refusal shows with its line
TARGETS = ("android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "edge-int8", "onnx",
           "openvino")


class _EveryTarget:
    """A families module whose entries list every target (the coverage run's cells)."""

    def __init__(self, module):
        self.module = module

    def builders(self) -> dict:
        return {name: (lambda out, build=build: {**build(out), "targets": list(TARGETS)})
                for name, build in self.module.builders().items()}


COVERED = tuple(_EveryTarget(m) for m in MODULES if not getattr(m, "FIXTURES_ONLY", False))
MODULES = COVERED + tuple(m for m in MODULES if getattr(m, "FIXTURES_ONLY", False))

if __name__ == "__main__":
    sys.exit(zoo.main(modules=MODULES, doc=__doc__, listed=COVERED))
