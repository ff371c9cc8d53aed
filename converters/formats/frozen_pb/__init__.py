"""The frozen GraphDef (`.pb`): what Android's TensorFlow runtime loads."""

from graphfreeze.formats.frozen_pb.export import STAGE
from graphfreeze.formats.frozen_pb.probe import frozen_probe
from graphfreeze.formats.frozen_pb.runtime import graph_runner
from graphfreeze.plugins import Format

FORMAT = Format("frozen_pb", STAGE, runtime=graph_runner, probe=frozen_probe)
