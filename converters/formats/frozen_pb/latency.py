"""--benchmark on a frozen .pb: the graph imported into a TensorFlow session as an app runs it
(grappler and the graph optimizer on, TensorFlow's defaults; its own pools: intra-op threads
set, one inter-op thread); what is timed is `session.run(fetches, feed_dict)`."""

from __future__ import annotations


def frozen_latency(graph_def, inputs, outputs):
    """latency(feeds {input name: array}, threads) -> (runtime, threads, call)."""

    def latency(feeds: dict, threads: int):
        import tensorflow as tf

        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        # per-session pools: TensorFlow otherwise sizes one process-wide pool at the first
        # session (graphfreeze's own, at every core) and ignores the thread counts given here
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                                          inter_op_parallelism_threads=1,
                                          use_per_session_threads=True)
        session = tf.compat.v1.Session(graph=graph, config=config)
        fetches = [graph.get_tensor_by_name(o.name) for o in outputs]
        feed_dict = {graph.get_tensor_by_name(i.name): feeds[i.name] for i in inputs}

        def call():
            return session.run(fetches, feed_dict)

        return f"TensorFlow {tf.__version__} session (grappler on)", threads, call

    return latency
