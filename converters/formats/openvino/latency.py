"""--benchmark on an OpenVINO IR: compiled on OpenVINO's CPU plugin as an app compiles it for
latency (PERFORMANCE_HINT LATENCY, INFERENCE_NUM_THREADS set, the plugin's default inference
precision); the inputs are set on one infer request once and what is timed is its synchronous
`infer()`, as OpenVINO's benchmark_app times `-api sync`."""

from __future__ import annotations


def openvino_latency(path: str, inputs):
    """latency(feeds {input name: array}, threads) -> (runtime, threads, call)."""

    def latency(feeds: dict, threads: int):
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(path, "CPU", {"PERFORMANCE_HINT": "LATENCY",
                                                    "INFERENCE_NUM_THREADS": threads})
        request = compiled.create_infer_request()
        for info in inputs:
            request.set_tensor(info.name, ov.Tensor(feeds[info.name]))
        precision = compiled.get_property("INFERENCE_PRECISION_HINT")
        precision = getattr(precision, "to_string", lambda: str(precision))()
        return (f"OpenVINO {ov.get_version().split('-')[0]} CPU ({precision})", threads,
                request.infer)

    return latency
