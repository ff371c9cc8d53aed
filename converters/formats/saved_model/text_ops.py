"""Op-library ops in this format: run by TensorFlow itself, as in a frozen GraphDef."""

from __future__ import annotations

from graphfreeze.formats.frozen_graph.text_ops import takes  # noqa: F401
