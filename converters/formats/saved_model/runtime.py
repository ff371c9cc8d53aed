"""A SavedModel directory run as a client runs it, as `freeze verify` runs a server artifact:
checked first as any untrusted SavedModel is (what loading would run), then loaded."""

from __future__ import annotations


def saved_model_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order, through the serving signature (keys are
    the node names the sidecar lists)."""

    def key(info) -> str:
        node, _, index = info.name.rpartition(":")
        return node if index in ("", "0") else f"{node}_{index}"

    def run(feeds: dict) -> list:
        from google.protobuf import message
        from graphfreeze import storage
        from graphfreeze.errors import InputError
        from graphfreeze.formats.saved_model.export import load_runner
        from graphfreeze.graph.checks.saved_model_safety import check_saved_model
        from tensorflow.core.protobuf import saved_model_pb2

        model = saved_model_pb2.SavedModel()
        pb = storage.join(path, "saved_model.pb")
        try:
            model.ParseFromString(storage.read_bytes(pb))
        except message.DecodeError as err:
            raise InputError(f"{pb}: not a SavedModel protobuf ({err})") from err
        for meta in model.meta_graphs:
            check_saved_model(meta, path, path)
        return load_runner(path, {key(i): i for i in inputs},
                           {key(o): o for o in outputs})(feeds)

    return run
