"""GraphDefs in TensorFlow: imported into fresh graphs, run in lean TF1 sessions (no grappler,
no graph optimizer).

Those rewrite passes copy the whole graph several times (hundreds of MB for a ResNet) and change
nothing we compare: we run a graph to evaluate constants or to check outputs, not to serve it.
`run_graph_def` runs through TensorFlow's C API where it can (`c_session`: the same session,
without `import tensorflow`), else through its Python API.
"""

from __future__ import annotations

import sys


def lean_config():
    """`c_session.LEAN_CONFIG` as a ConfigProto."""
    import tensorflow as tf
    from graphfreeze.graph.c_session import LEAN_CONFIG

    return tf.compat.v1.ConfigProto.FromString(LEAN_CONFIG)


def import_graph(graph_def):
    """A fresh tf.Graph holding `graph_def` (names unprefixed)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    return graph


def run_graph_def(graph_def, feeds: dict, fetches: list[str], first: tuple[str, ...] = ()) -> list:
    """Import `graph_def` into a fresh graph, run the ops named in `first` (a checkpoint's
    restores), then its lookup tables' `init_all_tables`, fed `feeds`, then `fetches`."""
    from graphfreeze.graph import c_session
    from graphfreeze.graph.tables import init_node

    init = init_node(graph_def)
    steps = tuple(ops for ops in (tuple(first), (init,) if init else ()) if ops)
    try:
        return c_session.run(graph_def, feeds, fetches, steps)
    except c_session.Unsupported:
        pass  # TensorFlow's Python API runs it, and says any error in its words
    import tensorflow as tf

    graph = import_graph(graph_def)
    with tf.compat.v1.Session(graph=graph, config=lean_config()) as sess:
        for ops in steps:
            sess.run([graph.get_operation_by_name(name) for name in ops], feeds or None)
        return sess.run(fetches, feeds)


def is_run_error(err: BaseException) -> bool:
    """Whether `err` is TensorFlow's error for a graph that fails as it runs (an OpError)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(err, tf.errors.OpError)
