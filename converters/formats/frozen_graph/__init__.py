"""The frozen GraphDef (`.pb`): what Android's TensorFlow runtime loads."""

from graphfreeze.formats.frozen_graph.export import FORMAT, STAGE  # noqa: F401
