"""OpenVINO IR (`.xml` + `.bin`), converted and run by OpenVINO (`graphfreeze[openvino]`)."""

from graphfreeze.formats.openvino.export import FORMAT, STAGE  # noqa: F401
