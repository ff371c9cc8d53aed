"""An OpenVINO IR run on OpenVINO's CPU plugin at f32 inference precision (not the bf16/f16 the
plugin may pick by default on some CPUs), as verification and the divergence locator run it."""

from __future__ import annotations

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def compiled(model_or_path):
    import openvino as ov

    return ov.Core().compile_model(model_or_path, "CPU", F32)


def compiled_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order, from the `.xml` at `path`."""

    def run(feeds: dict) -> list:
        import numpy as np

        model = compiled(path)
        result = model({info.name: feeds[info.name] for info in inputs})
        by_name = {name: value for port, value in result.items() for name in port.get_names()}
        return [np.asarray(by_name[info.name]) for info in outputs]

    return run
