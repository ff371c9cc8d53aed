"""Intermediate tensors of an OpenVINO IR, keyed by the TensorFlow tensor names OpenVINO keeps on
the outputs it converted (`dense/Relu:0`): what the divergence locator compares."""

from __future__ import annotations


def openvino_probe(path: str, inputs):
    """The wanted tensors made model outputs of a copy read from `path`, run on CPU at f32."""

    def probe(feeds: dict, names: list[str]) -> dict:
        import numpy as np
        import openvino as ov
        from graphfreeze.formats.openvino.runtime import compiled

        model = ov.Core().read_model(path)
        wanted, ports = set(names), []
        for op in model.get_ordered_ops():
            for output in op.outputs():
                if output.get_names() & wanted:
                    ports.append(output)
        if ports:
            model.add_outputs(ports)
        result = compiled(model)({info.name: feeds[info.name] for info in inputs})
        found = {}
        for port, value in result.items():
            for name in port.get_names() & wanted:
                found[name] = np.asarray(value)
        return found

    return probe
