"""Freeze a sample checkpoint's graph as the android target's graph stages do (variables,
strip_training, optimize_for_inference); with `--no-tensorflow`, importing TensorFlow fails.
Prints the sha256 of the frozen graph's bytes. Run by test_floor_freeze.py."""

import hashlib
import sys


class _NoTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras", "keras"):
            raise ImportError(f"{name} imported on the floor")


def frozen_sha(prefix: str, output: str) -> str:
    from graphfreeze.graph.graphdefs import reachable
    from graphfreeze.graph.inputs import inference_subgraph
    from graphfreeze.graph.ops import VARIABLE_OPS
    from graphfreeze.graph.passes.builtin import optimize_for_inference, strip_training
    from graphfreeze.graph.serialize import check_public_ops
    from graphfreeze.graph.variables import variables_to_constants
    from graphfreeze.names import flag_nodes
    from graphfreeze.sources.checkpoint import CheckpointModel

    model = CheckpointModel(prefix)
    graph_def = inference_subgraph(model.graph_def, [output], [])
    dtypes = {n.name: n.attr["dtype"].type for n in graph_def.node if n.op in VARIABLE_OPS}
    model.check_variables(sorted(dtypes))
    frozen = variables_to_constants(graph_def, dtypes, model.read_variables)
    flags = flag_nodes(model.graph_def, reachable(model.graph_def, [output]), set())
    frozen, _ = strip_training(frozen, [output], flags)
    frozen = optimize_for_inference(frozen, [output])
    check_public_ops(frozen)
    return hashlib.sha256(frozen.SerializeToString(deterministic=True)).hexdigest()


if __name__ == "__main__":
    if "--no-tensorflow" in sys.argv:
        sys.meta_path.insert(0, _NoTensorFlow())
    print(frozen_sha(sys.argv[1], sys.argv[2]))
    assert "tensorflow" not in sys.modules or "--no-tensorflow" not in sys.argv
