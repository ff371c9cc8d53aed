"""A frozen GraphDef file run in TensorFlow, as `freeze verify` runs an android artifact: parsed,
checked as any untrusted graph is (structure, host ops, what TensorFlow's importer takes), then
run; anything wrong with the file is one InputError naming it."""

from __future__ import annotations


def graph_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order, from the `.pb` at `path`."""

    def run(feeds: dict) -> list:
        from google.protobuf import message
        from graphfreeze.errors import InputError, first_line
        from graphfreeze.graph.checks.safety import check_graph
        from graphfreeze.graph.checks.validate import check_graph_def
        from graphfreeze.graph.checks.validate_values import check_import
        from graphfreeze.graph.graphdefs import split_tensor
        from graphfreeze.graph.skeleton import run_frozen
        from graphfreeze.io import storage
        from tensorflow.core.framework import graph_pb2

        graph_def = graph_pb2.GraphDef()
        try:
            graph_def.ParseFromString(storage.read_bytes(path))
        except message.DecodeError as err:
            raise InputError(f"{path}: not a frozen GraphDef ({first_line(err)})") from err
        check_graph_def(graph_def, path)
        nodes = {n.name for n in graph_def.node}
        for info in (*inputs, *outputs):
            if split_tensor(info.name)[0] not in nodes:
                raise InputError(f"{path}: has no node '{info.name}', which its sidecar names; "
                                 "the file is not the artifact its sidecar describes")
        graph_def, _ = check_graph(graph_def, [split_tensor(o.name)[0] for o in outputs], path)
        check_import(graph_def, path)
        try:
            return run_frozen(graph_def, feeds, [o.name for o in outputs])
        except Exception as err:  # noqa: BLE001 -- TensorFlow's errors for a file, not a bug
            raise InputError(f"{path}: TensorFlow cannot run it on the golden inputs "
                             f"({first_line(err)}); the file is not the artifact its sidecar "
                             "describes") from err

    return run
