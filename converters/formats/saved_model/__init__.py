"""The SavedModel directory: what TensorFlow Serving loads."""

from graphfreeze.formats.saved_model.export import FORMAT, STAGE  # noqa: F401
