"""GraphDefs in TensorFlow: imported into fresh graphs, run in lean TF1 sessions (no grappler,
no graph optimizer).

Those rewrite passes copy the whole graph several times (hundreds of MB for a ResNet) and change
nothing we compare: we run a graph to evaluate constants or to check outputs, not to serve it.
"""

from __future__ import annotations


def lean_config():
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_function_inlining = True
    config.experimental.optimize_for_static_graph = True  # drop the session's graph copies
    return config


def import_graph(graph_def):
    """A fresh tf.Graph holding `graph_def` (names unprefixed)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    return graph


def run_graph_def(graph_def, feeds: dict, fetches: list[str]) -> list:
    """Import `graph_def` into a fresh graph and run `fetches` (its lookup tables filled
    first: `init_all_tables`, fed what it reads)."""
    import tensorflow as tf
    from graphfreeze.graph.tables import run_init

    graph = import_graph(graph_def)
    with tf.compat.v1.Session(graph=graph, config=lean_config()) as sess:
        run_init(sess, graph, feeds)
        return sess.run(fetches, feeds)
