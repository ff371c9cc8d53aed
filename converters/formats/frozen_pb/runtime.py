"""A frozen GraphDef file run in TensorFlow, as `freeze verify` runs an android artifact: parsed,
checked as any untrusted graph is (structure, host ops), then run."""

from __future__ import annotations


def graph_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order, from the `.pb` at `path`."""

    def run(feeds: dict) -> list:
        from google.protobuf import message
        from graphfreeze import storage
        from graphfreeze.errors import InputError, first_line
        from graphfreeze.graph.checks.safety import check_graph
        from graphfreeze.graph.checks.validate import check_graph_def
        from graphfreeze.graph.skeleton import run_frozen
        from tensorflow.core.framework import graph_pb2

        graph_def = graph_pb2.GraphDef()
        try:
            graph_def.ParseFromString(storage.read_bytes(path))
        except message.DecodeError as err:
            raise InputError(f"{path}: not a frozen GraphDef ({first_line(err)})") from err
        check_graph_def(graph_def, path)
        nodes = {n.name for n in graph_def.node}
        for info in (*inputs, *outputs):
            if info.name.rsplit(":", 1)[0] not in nodes:
                raise InputError(f"{path}: has no node '{info.name}', which its sidecar names; "
                                 "the file is not the artifact its sidecar describes")
        graph_def, _ = check_graph(graph_def, [o.name.rsplit(":", 1)[0] for o in outputs], path)
        return run_frozen(graph_def, feeds, [o.name for o in outputs])

    return run
