"""The SavedModel directory: what TensorFlow Serving loads."""

from graphfreeze.formats.frozen_pb.probe import frozen_probe
from graphfreeze.formats.saved_model.export import STAGE
from graphfreeze.formats.saved_model.runtime import saved_model_runner
from graphfreeze.plugins import Format

FORMAT = Format("saved_model", STAGE, runtime=saved_model_runner, probe=frozen_probe)
