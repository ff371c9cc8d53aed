"""A frozen GraphDef (`.pb`) run in TensorFlow: verification and the divergence locator run its
skeleton with the weights fed (`skeleton.run_frozen`, grappler off: the graph's own numbers);
--benchmark imports it into a session as an app does (grappler on, per-session pools). Read back
later (`freeze verify`), the file is checked as any untrusted graph is (structure, host ops,
what TensorFlow's importer takes) before it runs."""

from __future__ import annotations

from graphfreeze.errors import RunError, first_line
from graphfreeze.plugins import Session


def open_frozen(path: str, inputs, outputs, *, threads: int = 2, keep: tuple[str, ...] = (),
                untrusted: bool = False, loaded=None) -> FrozenSession:
    from graphfreeze.graph.op_libraries import load_for

    # what the export holds: the graph and its weights held apart (graph/weights.py) or None
    graph_def, weights = loaded if loaded is not None else \
        (read(path, inputs, outputs, untrusted), None)
    load_for(graph_def, path)  # TF-Text's ops, registered by tensorflow_text
    return FrozenSession(graph_def, inputs, outputs, threads, keep, weights)


def read(path: str, inputs, outputs, untrusted: bool):
    """The GraphDef in the file at `path`; checked first when `untrusted`."""
    from google.protobuf import message
    from graphfreeze.errors import InputError
    from graphfreeze.io import storage
    from graphfreeze.proto.tf import graph_pb2

    graph_def = graph_pb2.GraphDef()
    try:
        graph_def.ParseFromString(storage.read_bytes(path))
    except message.DecodeError as err:
        raise InputError(f"{path}: not a frozen GraphDef ({first_line(err)})") from err
    return check(graph_def, path, inputs, outputs) if untrusted else graph_def


def check(graph_def, path: str, inputs, outputs):
    """The graph as any untrusted graph is checked, cut to what the outputs need; its inputs and
    outputs must be the ones its sidecar names."""
    from graphfreeze.errors import InputError
    from graphfreeze.graph.checks.safety import check_graph
    from graphfreeze.graph.checks.validate import check_graph_def
    from graphfreeze.graph.checks.validate_values import check_import
    from graphfreeze.graph.graphdefs import split_tensor

    check_graph_def(graph_def, path)
    nodes = {n.name for n in graph_def.node}
    for info in (*inputs, *outputs):
        if split_tensor(info.name)[0] not in nodes:
            raise InputError(f"{path}: has no node '{info.name}', which its sidecar names; "
                             "the file is not the artifact its sidecar describes")
    graph_def, _ = check_graph(graph_def, [split_tensor(o.name)[0] for o in outputs], path)
    check_import(graph_def, path)
    return graph_def


class FrozenSession(Session):
    def __init__(self, graph_def, inputs, outputs, threads: int, keep: tuple[str, ...],
                 weights=None):
        self.graph_def, self.inputs, self.outputs = graph_def, inputs, outputs
        self.threads, self.keep, self.weights = threads, list(keep), weights

    def _fetch(self, feeds: dict, names: list[str]) -> list:
        from graphfreeze.graph.skeleton import run_frozen

        try:
            return run_frozen(self.graph_def, feeds, names, self.weights)
        except Exception as err:  # noqa: BLE001 -- TensorFlow's errors for a graph, not a bug
            raise RunError(f"TensorFlow cannot run it ({first_line(err)})") from err

    def run(self, feeds: dict) -> list:
        return self._fetch(feeds, [o.name for o in self.outputs])

    def tensors(self, feeds: dict) -> dict:
        return dict(zip(self.keep, self._fetch(feeds, self.keep), strict=True))

    def bind(self, feeds: dict):
        import tensorflow as tf
        from graphfreeze.graph.tables import run_init

        graph_def = self.graph_def
        if self.weights is not None:  # the whole graph, as an app imports it
            from graphfreeze.graph.graphdefs import copied
            from graphfreeze.graph.weights import attach

            graph_def = copied(graph_def)
            attach(graph_def, self.weights)
        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        # per-session pools: TensorFlow otherwise sizes one process-wide pool at the first
        # session (graphfreeze's own, at every core) and ignores the thread counts given here
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=self.threads,
                                          inter_op_parallelism_threads=1,
                                          use_per_session_threads=True)
        session = tf.compat.v1.Session(graph=graph, config=config)
        run_init(session, graph)
        fetches = [graph.get_tensor_by_name(o.name) for o in self.outputs]
        feed_dict = {graph.get_tensor_by_name(i.name): feeds[i.name] for i in self.inputs}
        self.label = f"TensorFlow {tf.__version__} session (grappler on)"
        return lambda: session.run(fetches, feed_dict)
