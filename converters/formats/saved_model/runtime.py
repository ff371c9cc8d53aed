"""A SavedModel directory run as a client runs it, as `freeze verify` runs a server artifact:
checked first as any untrusted SavedModel is (its graphs, what loading would run), then loaded;
anything wrong with it is one InputError naming it."""

from __future__ import annotations


def saved_model_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order, through the serving signature (keys are
    the names `export.signature_key` gives)."""

    def run(feeds: dict) -> list:
        from google.protobuf import message, text_format
        from graphfreeze.errors import InputError, first_line
        from graphfreeze.formats.saved_model.export import load_runner, signature_key
        from graphfreeze.graph.checks.saved_model_safety import check_saved_model
        from graphfreeze.graph.checks.validate import check_graph_def
        from graphfreeze.graph.graphdefs import split_tensor
        from graphfreeze.io import storage
        from graphfreeze.names import TensorRef
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

        def key(info) -> str:
            return signature_key(TensorRef(*split_tensor(info.name)))

        try:
            return load_runner(path, {key(i): i for i in inputs},
                               {key(o): o for o in outputs})(feeds)
        except Exception as err:  # noqa: BLE001 -- TensorFlow's errors for a file, not a bug
            raise InputError(f"{path}: TensorFlow cannot run its serving signature on the "
                             f"golden inputs ({first_line(err)})") from err

    return run
