"""Op-library ops in this format: run by TensorFlow itself, with the library's package imported
first (`graph/op_libraries.load`: `import tensorflow_text` registers TF-Text's kernels)."""

from __future__ import annotations


def takes(op: str) -> bool:
    """Every TF-Text op: TensorFlow runs it once tensorflow-text is imported."""
    return True
