"""--benchmark on a .onnx: an onnxruntime InferenceSession as an app makes it (CPU execution
provider, default graph optimizations, `intra_op_num_threads` set, one inter-op thread); what is
timed is `session.run(outputs, feeds, run_options)`, as onnxruntime's own perf tools time a
run."""

from __future__ import annotations


def onnx_latency(path: str, inputs, outputs):
    """latency(feeds {input name: array}, threads) -> (runtime, threads, call)."""

    def latency(feeds: dict, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in outputs]
        bound = {i.name: feeds[i.name] for i in inputs}
        run_options = ort.RunOptions()

        def call():
            return session.run(names, bound, run_options)

        return f"onnxruntime {ort.__version__} (CPUExecutionProvider)", threads, call

    return latency
