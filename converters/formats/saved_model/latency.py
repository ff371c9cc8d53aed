"""--benchmark on a SavedModel: loaded as a client loads it (`tf.saved_model.load`, the serving
signature called eagerly); what is timed is one signature call on tensors made beforehand.

Eager TensorFlow fixes its intra-op thread pool when the process first runs an op, before any
stage, so the thread count asked for applies only if nothing has run yet; the record says the
count it ran with."""

from __future__ import annotations

import os


def saved_model_latency(export_dir: str, tags: list[str], signature: str, inputs: dict,
                        outputs: dict):
    """latency(feeds {input name: array}, threads) -> (runtime, threads, call); `inputs` and
    `outputs` map signature keys to TensorInfos."""

    def latency(feeds: dict, threads: int):
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # the eager context exists: its pools are what runs
            threads = tf.config.threading.get_intra_op_parallelism_threads() or _cores()
        fn = tf.saved_model.load(export_dir, tags=tags).signatures[signature]
        args = {key: tf.constant(feeds[info.name]) for key, info in inputs.items()}
        keys = list(outputs)

        def call():
            result = fn(**args)
            return [result[k].numpy() for k in keys]

        return f"TensorFlow {tf.__version__} tf.saved_model.load (eager)", threads, call

    return latency


def _cores() -> int:
    """The cores this process may use: what TensorFlow's default pools size themselves to."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
