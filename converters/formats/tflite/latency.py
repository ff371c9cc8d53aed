"""--benchmark on a .tflite: LiteRT's Interpreter as an app makes it (its default delegate,
XNNPack, applied; `num_threads` set), resized to the feeds' batch-1 shapes and allocated once,
the inputs set once (int8 ones quantized); what is timed is `invoke()`, as LiteRT's own
benchmark tools time a run."""

from __future__ import annotations


def tflite_latency(path: str):
    """latency(feeds {input name: array}, threads) -> (runtime, threads, call)."""

    def latency(feeds: dict, threads: int):
        from graphfreeze.formats.tflite.runtime import (
            ArtifactRunError,
            FlexOpsError,
            input_details,
            interpreter,
            invoke,
        )
        from graphfreeze.process.quiet import native_stderr_off

        nodes = {name.rsplit(":", 1)[0]: value for name, value in feeds.items()}
        interp = interpreter(model_path=path, num_threads=threads)
        details = input_details(interp, list(nodes))
        with native_stderr_off():
            try:
                for name, value in nodes.items():
                    if tuple(details[name]["shape"]) != value.shape:
                        interp.resize_tensor_input(details[name]["index"], value.shape)
                interp.allocate_tensors()
            except (RuntimeError, ValueError) as err:
                raise ArtifactRunError(str(err).strip().splitlines()[0]) from err
        try:
            invoke(path, nodes, interp=interp)  # sets the inputs (quantized) and runs once
        except FlexOpsError as err:
            raise ArtifactRunError("uses Flex ops, which LiteRT's Python interpreter cannot "
                                   "run") from err
        return f"LiteRT {_version()} Interpreter (XNNPack)", threads, interp.invoke

    return latency


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ai-edge-litert")
    except Exception:  # noqa: BLE001 -- tf.lite.Interpreter when ai_edge_litert is missing
        import tensorflow as tf

        return f"(tf.lite {tf.__version__})"
