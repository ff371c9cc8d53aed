"""The SavedModel directory: what TensorFlow Serving loads."""

from graphfreeze.formats.frozen_pb.probe import frozen_probe
from graphfreeze.formats.saved_model.export import STAGE, load_runner
from graphfreeze.plugins import Format

FORMAT = Format("saved_model", STAGE, runtime=load_runner, probe=frozen_probe)
