"""A SavedModel's serving signature for a format whose converter reads the SavedModel folder
itself (`Source.interface`), with no TensorFlow in this process.

Its graph is the signature's interface only: a Placeholder per input key and one per output key
(after every input, by control edges), shaped and typed as the signature says. The run's names,
the sidecar's inputs and outputs and verification's seeded inputs come from it. Its reference,
run in the run's TensorFlow child, is the signature itself, loaded with TensorFlow's TF1
SavedModel loader (what TensorFlow Serving does: the saved graph and its restore op, in a
few tenths of a second where `tf.saved_model.load` rebuilds every function in Python): its C++
loader through TensorFlow's C API (`graph.c_session`, no `import tensorflow`), else its Python
loader.
"""

from __future__ import annotations

import re
import threading
import uuid

from graphfreeze.errors import InputError, first_line
from graphfreeze.io import storage
from graphfreeze.sources.frozen import FrozenModel, run_errors_said
from graphfreeze.tensors import TensorInfo

NODE_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-]*")  # what the frozen graph's nodes take
_LOCK = threading.Lock()
_LOADED: dict = {}  # the last run's (token, run): loaded once per run
# tf.compat.v1.ConfigProto with grappler's meta optimizer off (its passes cost ~0.5 s and
# change nothing compared), serialized (a test compares)
CONFIG = bytes.fromhex("52055203980101")


class SignatureModel(FrozenModel):
    """The signature `signature` under `tag` of the SavedModel in `folder` (see the module
    docstring); `interface`: the graph holds no computation, the format reads `location`
    (`stored_graph`: the graph the files hold, functions included, for the format to judge)."""

    kind = "saved_model"
    interface = True

    def __init__(self, folder: str, meta, tag: str, signature: str):
        sig = meta.signature_def[signature]
        super().__init__(folder, storage.join(folder, "saved_model.pb"), interface_graph(sig),
                         sorted(sig.inputs), sorted(sig.outputs))
        self.tag, self.signature = tag, signature
        self.tensors = ({k: t.name for k, t in sig.inputs.items()},  # (inputs, outputs)
                        {k: t.name for k, t in sig.outputs.items()})
        self.stored_graph = meta.graph_def  # what the files hold, functions included
        self.token = uuid.uuid4().hex  # this run's: a later run loads the files again

    def __getstate__(self) -> dict:  # run_reference loads the files
        return {**super().__getstate__(), "stored_graph": None}

    def infos(self) -> tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]:
        """(inputs, outputs) as the signature records them, in the order of the keys."""
        from graphfreeze.proto import dtypes

        def info(node) -> TensorInfo:
            shape = node.attr["shape"].shape
            dims = None if shape.unknown_rank else \
                tuple(None if d.size < 0 else d.size for d in shape.dim)
            return TensorInfo(f"{node.name}:0", dtypes.name(node.attr["dtype"].type), dims)

        nodes = {n.name: n for n in self.graph_def.node}
        return (tuple(info(nodes[k]) for k in self.default_inputs),
                tuple(info(nodes[k]) for k in self.default_outputs))

    def run_reference(self, graph_def, feeds: dict, fetches: list[str]) -> list:
        """The signature on `feeds` (named `key:0`), fetching `key:0` outputs."""
        from graphfreeze.graph import c_session

        inputs, outputs = self.tensors
        feeds = {inputs[k.rsplit(":", 1)[0]]: v for k, v in feeds.items()}
        fetches = [outputs[f.rsplit(":", 1)[0]] for f in fetches]
        with run_errors_said(self.graph_file):
            try:
                return _loaded(self, self.graph_file)(feeds, fetches)
            except c_session.Unsupported:  # TensorFlow's Python loader: its words for any error
                return _loaded(self, self.graph_file, python=True)(feeds, fetches)


def read_as_is(meta, signature: str) -> bool:
    """Whether what the signature runs (its outputs' nodes and the functions they call) is
    what a reader of the files may convert as it is: no training flag (PlaceholderWithDefault)
    to fold, no random op (dropout) to strip; the graph runs no non-max suppression (a
    detector's outputs are judged as detections, on its graph); every key names a node and a
    dense tensor; and no input is an integer (token ids: verification's inputs must stay within
    the rows of tables the frozen graph shows, `data/domains.py`)."""
    from graphfreeze.graph.composites import detection_node
    from graphfreeze.graph.graphdefs import functions_reached, nodes_by_name, reachable
    from graphfreeze.graph.passes.dropout import RANDOM_OPS
    from graphfreeze.proto import dtypes

    sig = meta.signature_def[signature]
    tensors = [*sig.inputs.items(), *sig.outputs.items()]
    if any(not NODE_NAME.fullmatch(key) or not t.name or not t.dtype for key, t in tensors) or \
            any(dtypes.name(t.dtype).startswith(("int", "uint")) for t in sig.inputs.values()):
        return False  # a key no node may be named, a composite tensor, integers
    graph_def = meta.graph_def
    by_name = nodes_by_name(graph_def)
    used = [by_name[name] for name in reachable(
        graph_def, [t.name for t in meta.signature_def[signature].outputs.values()])]
    funcs = {f.signature.name: f for f in graph_def.library.function}
    called = (node for name in functions_reached(funcs, used) for node in funcs[name].node_def)
    training = RANDOM_OPS | {"PlaceholderWithDefault"}
    return detection_node(graph_def) is None and \
        not any(node.op in training for node in (*used, *called))


def interface_graph(sig):
    """The GraphDef of a SignatureDef's interface (see the module docstring)."""
    from graphfreeze.proto.tf import graph_pb2

    graph_def = graph_pb2.GraphDef()
    for keys, after in ((sig.inputs, []), (sig.outputs, [f"^{k}" for k in sorted(sig.inputs)])):
        for key in sorted(keys):
            node = graph_def.node.add(name=key, op="Placeholder", input=after)
            node.attr["dtype"].type = keys[key].dtype
            if keys[key].HasField("tensor_shape"):
                node.attr["shape"].shape.CopyFrom(keys[key].tensor_shape)
            else:  # not recorded: unknown, not a scalar
                node.attr["shape"].shape.unknown_rank = True
    return graph_def


def _loaded(model: SignatureModel, where: str, python: bool = False):
    """run(feeds, fetches) of the model's SavedModel, loaded once per run (the session of an
    earlier run closed): by the C API unless `python` (or loaded so already)."""
    with _LOCK:  # (the child runs two calls at a time)
        if _LOADED.get("token") != model.token or python and not _LOADED["python"]:
            if _LOADED:
                _LOADED.pop("close")()
                _LOADED.clear()
            session = _load_python(model, where) if python else _load_c(model)
            _LOADED.update(token=model.token, python=python, **session)
        return _LOADED["run"]


def _load_c(model: SignatureModel) -> dict:
    from graphfreeze.graph import c_session

    session = c_session.Session.of_saved_model(model.location, model.tag, CONFIG)
    return {"run": session.run, "close": session.close}


def _load_python(model: SignatureModel, where: str) -> dict:
    import tensorflow as tf

    graph = tf.Graph()
    config = tf.compat.v1.ConfigProto.FromString(CONFIG)
    session = tf.compat.v1.Session(graph=graph, config=config)
    try:
        with graph.as_default():
            tf.compat.v1.saved_model.loader.load(session, [model.tag], model.location)
    except Exception as err:  # a graph TF1's loader cannot restore: the full path is taken
        session.close()
        raise InputError(f"{where}: TensorFlow's SavedModel loader cannot load it "
                         f"({first_line(err)})") from err
    return {"run": lambda feeds, fetches: session.run(fetches, feeds), "close": session.close}
