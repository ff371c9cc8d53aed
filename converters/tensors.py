"""Run-level helpers the stages share: a model's inputs and outputs as the app sees them
(`TensorInfo`, from TensorFlow's shape inference) and the seeded inputs runs are compared on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output as the sidecar and the Android app see it."""

    name: str  # "x:0"
    dtype: str  # "float32"
    shape: tuple[int | None, ...] | None  # None: unknown rank

    def as_json(self) -> dict:
        return {"name": self.name, "node": self.name.rsplit(":", 1)[0], "dtype": self.dtype,
                "shape": None if self.shape is None else list(self.shape)}


def tensor_infos(graph_def, refs) -> tuple[TensorInfo, ...]:
    """Dtype and static shape of each named tensor, from TensorFlow's own shape inference on
    the graph's skeleton (weights dropped)."""
    from graphfreeze.graph.session import import_graph
    from graphfreeze.graph.skeleton import skeleton

    graph = import_graph(skeleton(graph_def))
    infos = []
    for ref in refs:
        tensor = graph.get_tensor_by_name(ref.name)
        shape = None if tensor.shape.rank is None else tuple(tensor.shape.as_list())
        infos.append(TensorInfo(ref.name, tensor.dtype.name, shape))
    return tuple(infos)


def io_infos(state) -> tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]:
    """(inputs, outputs) of state.graph_def, worked out once per graph for all targets."""
    cached = state.memo.get("io_infos")
    if cached is None or cached[0] is not state.graph_def:
        infos = tensor_infos(state.graph_def, [*state.inputs, *state.outputs])
        cached = (state.graph_def, infos[:len(state.inputs)], infos[len(state.inputs):])
        state.memo["io_infos"] = cached
    return cached[1], cached[2]


def sample_inputs(infos, batch_size: int, seed: int, where: str = "the model") -> dict:
    """Seeded inputs: unknown batch dims get `batch_size` (or the batch the other inputs fix,
    when they fix one), other unknown dims 8; absurd sizes (over 1 GiB an input) refused."""
    import numpy as np
    from graphfreeze.errors import InputError
    from graphfreeze.graph.checks.validate_values import check_feed_size

    rng = np.random.default_rng(seed)
    fixed = {i.shape[0] for i in infos if i.shape and len(i.shape) > 1 and i.shape[0] is not None}
    if len(fixed) == 1:
        (batch_size,) = fixed
    feeds = {}
    for info in infos:
        if info.shape is None:
            node = info.name.rsplit(":", 1)[0]
            raise InputError(f"input '{info.name}' has unknown rank, so it cannot be verified; "
                             f"give its shape, e.g. --inputs '{node}[1,4]' (your model's dims), "
                             "or pass --no-verify")
        shape = [(batch_size if i == 0 else 8) if d is None else d
                 for i, d in enumerate(info.shape)]
        dtype = np.dtype(info.dtype) if info.dtype != "string" else None
        if dtype is None:
            raise InputError(f"input '{info.name}' is a string tensor; pass --no-verify")
        check_feed_size(info.name, shape, dtype, where)
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            feeds[info.name] = rng.integers(0, 10, size=shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[info.name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            raise InputError(f"input '{info.name}' has dtype {info.dtype}; pass --no-verify")
    return feeds
