"""OpenVINO IR (`.xml` + `.bin`), converted and run by OpenVINO (`graphfreeze[openvino]`)."""

from graphfreeze.formats.openvino.export import STAGE
from graphfreeze.formats.openvino.gaps import openvino_gaps
from graphfreeze.formats.openvino.probe import openvino_probe
from graphfreeze.formats.openvino.runtime import compiled_runner
from graphfreeze.plugins import Format

FORMAT = Format("openvino", STAGE, runtime=compiled_runner, probe=openvino_probe,
                gaps=openvino_gaps, requires=("openvino",), extra="openvino")
