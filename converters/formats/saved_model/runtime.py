"""A SavedModel directory run as a client runs it: its serving signature through
`tf.saved_model.load` (verification, --benchmark: one call on tensors made beforehand, eager).
The divergence locator reads its intermediate tensors from the frozen graph the export holds
(TensorFlow against TensorFlow: the same graph), or from the SavedModel's own graph in a
session. Read back later (`freeze verify`), it is checked first as any untrusted SavedModel is
(its graphs, what loading would run).

Eager TensorFlow fixes its intra-op thread pool when the process first runs an op, so the
thread count asked for applies only if nothing has run yet; `threads` says the count it ran
with."""

from __future__ import annotations

import os

from graphfreeze.errors import InputError, RunError, first_line
from graphfreeze.plugins import Session

SERVE_TAG = "serve"
SIGNATURE = "serving_default"


def signature_key(ref) -> str:
    """The name a client uses: the node name (`probs`), `node_1` for a node's second output."""
    return ref.node if ref.index == 0 else f"{ref.node}_{ref.index}"


def keyed(infos) -> dict:
    """{signature key: TensorInfo}."""
    from graphfreeze.graph.graphdefs import split_tensor
    from graphfreeze.names import TensorRef

    return {signature_key(TensorRef(*split_tensor(i.name))): i for i in infos}


def open_saved_model(path: str, inputs, outputs, *, threads: int = 2,
                     keep: tuple[str, ...] = (), untrusted: bool = False,
                     loaded=None) -> SavedModelSession:
    if untrusted:
        check(path)  # registers the op libraries its graphs use, as any source's check does
    elif loaded is not None:
        from graphfreeze.graph.op_libraries import load_for

        load_for(loaded, path)
    return SavedModelSession(path, inputs, outputs, threads, keep, loaded)


def check(path: str) -> None:
    """The SavedModel's graphs checked as any untrusted SavedModel's are."""
    from google.protobuf import message, text_format
    from graphfreeze.graph.checks.saved_model_safety import check_saved_model
    from graphfreeze.graph.checks.validate import check_graph_def
    from graphfreeze.io import storage
    from tensorflow.core.protobuf import saved_model_pb2

    model = saved_model_pb2.SavedModel()
    pb, pbtxt = storage.join(path, "saved_model.pb"), storage.join(path, "saved_model.pbtxt")
    try:
        if storage.exists(pb) or not storage.exists(pbtxt):
            model.ParseFromString(storage.read_bytes(pb))
        else:
            text_format.Parse(storage.read_bytes(pbtxt).decode("utf-8"), model)
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: not a SavedModel ({first_line(err)})") from err
    if not model.meta_graphs:
        raise InputError(f"{path}: a SavedModel with no graph; convert the model again")
    for meta in model.meta_graphs:
        check_graph_def(meta.graph_def, path)
        check_saved_model(meta, path, path)


class SavedModelSession(Session):
    def __init__(self, path: str, inputs, outputs, threads: int, keep, frozen):
        self.path, self.threads, self.keep, self.frozen = path, threads, list(keep), frozen
        self.inputs, self.outputs = keyed(inputs), keyed(outputs)
        self._signature = None

    def signature(self):
        import tensorflow as tf

        if self._signature is None:
            try:
                self._signature = tf.saved_model.load(self.path,
                                                      tags=[SERVE_TAG]).signatures[SIGNATURE]
            except Exception as err:  # noqa: BLE001 -- TensorFlow's errors for a file
                raise RunError(f"TensorFlow cannot load its serving signature "
                               f"({first_line(err)})") from err
        return self._signature

    def run(self, feeds: dict) -> list:
        import tensorflow as tf

        fn = self.signature()
        try:
            result = fn(**{k: tf.constant(feeds[i.name]) for k, i in self.inputs.items()})
            return [result[k].numpy() for k in self.outputs]
        except Exception as err:  # noqa: BLE001 -- TensorFlow's errors for a file, not a bug
            raise RunError(f"TensorFlow cannot run its serving signature "
                           f"({first_line(err)})") from err

    def tensors(self, feeds: dict) -> dict:
        from graphfreeze.graph.weights import is_held

        if self.frozen is not None and not any(is_held(n) for n in self.frozen.node):
            from graphfreeze.graph.skeleton import run_frozen  # (its weights in it)

            return dict(zip(self.keep, run_frozen(self.frozen, feeds, self.keep), strict=True))
        import tensorflow as tf

        with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
            tf.compat.v1.saved_model.loader.load(session, [SERVE_TAG], self.path)
            names = [n for n in self.keep if _has(graph, n)]
            values = session.run(names, {i.name: feeds[i.name] for i in self.inputs.values()})
        return dict(zip(names, values, strict=True))

    def bind(self, feeds: dict):
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(self.threads)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # the eager context exists: its pools are what runs
            self.threads = tf.config.threading.get_intra_op_parallelism_threads() or _cores()
        fn = self.signature()
        args = {key: tf.constant(feeds[info.name]) for key, info in self.inputs.items()}
        keys = list(self.outputs)
        self.label = f"TensorFlow {tf.__version__} tf.saved_model.load (eager)"

        def call():
            result = fn(**args)
            return [result[k].numpy() for k in keys]

        return call


def _has(graph, name: str) -> bool:
    try:
        graph.get_tensor_by_name(name)
    except (KeyError, ValueError):
        return False
    return True


def _cores() -> int:
    """The cores this process may use: what TensorFlow's default pools size themselves to."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
