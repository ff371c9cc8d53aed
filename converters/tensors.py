"""Run-level helpers the stages share: a model's inputs and outputs as the app sees them
(`TensorInfo`, from TensorFlow's shape inference) and the seeded inputs runs are compared on."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output as the sidecar and the Android app see it."""

    name: str  # "x:0"
    dtype: str  # "float32"
    shape: tuple[int | None, ...] | None  # None: unknown rank
    # What values an input takes (data/domains.Domain: table keys, vocabulary, ragged splits)
    domain: Any = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict:
        return {"name": self.name, "node": self.name.rsplit(":", 1)[0], "dtype": self.dtype,
                "shape": None if self.shape is None else list(self.shape)}


def infos(entries: list[dict]) -> tuple[TensorInfo, ...]:
    """TensorInfos from their sidecar entries (`TensorInfo.as_json`)."""
    return tuple(TensorInfo(e["name"], e["dtype"], None if e["shape"] is None
                            else tuple(e["shape"])) for e in entries)


def tensor_infos(graph_def, refs, memo: dict | None = None) -> tuple[TensorInfo, ...]:
    """Dtype and static shape of each named tensor: from graph/shapes where it has every op's
    shape function, else from TensorFlow's own shape inference on the graph's skeleton (weights
    dropped; a stand-in composite's outputs shaped as its op's), in the run's TensorFlow child
    if it has one (`memo`)."""
    from graphfreeze.graph.composites import as_references
    from graphfreeze.graph.skeleton import skeleton
    from graphfreeze.process import tensorflow_child

    referenced = as_references(graph_def)
    if referenced is graph_def:
        found = _inferred_here(graph_def, refs)
        if found is not None:
            return found
    plain = skeleton(graph_def) if referenced is not graph_def else None
    return tensorflow_child.call(memo or {}, _inferred, skeleton(referenced), plain, refs)


def _inferred_here(graph_def, refs) -> tuple[TensorInfo, ...] | None:
    """tensor_infos by graph/shapes, without TensorFlow (None: TensorFlow must answer)."""
    from graphfreeze.graph.graphdefs import split_tensor
    from graphfreeze.graph.shapes.dims import Unsupported
    from graphfreeze.graph.shapes.infer import ImportFault, infer
    from graphfreeze.proto.dtypes import name

    tensors = [split_tensor(ref.name) for ref in refs]
    try:
        found = infer(graph_def, sorted({node for node, _ in tensors}))
    except (Unsupported, ImportFault):  # TensorFlow says what it has to say
        return None
    except Exception:  # noqa: BLE001 -- a bug here must not fail a run TensorFlow can do
        return None
    infos = []
    for ref, (node, index) in zip(refs, tensors, strict=True):
        if index >= len(found[node]):
            return None
        dtype, shape = found[node][index]
        infos.append(TensorInfo(ref.name, name(dtype), shape))
    return tuple(infos)


def _inferred(first, plain, refs) -> tuple[TensorInfo, ...]:
    """tensor_infos on the skeleton `first`, or (a reader needs the stand-in's own shape)
    `plain`: imported through TensorFlow's C API, else its Python API."""
    from graphfreeze.graph import c_session
    from graphfreeze.graph.session import import_graph
    from graphfreeze.proto.dtypes import name

    try:
        with c_session.imported(first) as graph:
            types = [graph.tensor_type(ref.name) for ref in refs]
        return tuple(TensorInfo(ref.name, name(dtype), shape)
                     for ref, (dtype, shape) in zip(refs, types, strict=True))
    except c_session.Unsupported:
        pass  # what the Python API does, in its words

    try:
        graph = import_graph(first)
    except ValueError:
        if plain is None:
            raise
        graph = import_graph(plain)
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
        from graphfreeze.data.domains import domains

        infos = tensor_infos(state.graph_def, [*state.inputs, *state.outputs], state.memo)
        inputs = infos[:len(state.inputs)]
        found = domains(state.graph_def, inputs)
        inputs = tuple(replace(i, domain=found.get(i.name)) for i in inputs)
        cached = (state.graph_def, inputs, infos[len(state.inputs):])
        state.memo["io_infos"] = cached
    return cached[1], cached[2]


def known_infos(state, inputs: tuple[TensorInfo, ...], outputs: tuple[TensorInfo, ...]) -> None:
    """Make `io_infos(state)` answer (inputs, outputs) as given: what a model's files say of its
    inputs and outputs, where its graph is not inferred (sources/saved_model_interface.py)."""
    state.memo["io_infos"] = (state.graph_def, inputs, outputs)


ALPHABET = "abcdefgh"  # seeded strings: short words of these letters


def _drawn(dtype: str, n: int, domain, seed: int, where: str):
    """n seeded values of `dtype` from `domain`, as an input of that domain gets them."""
    return sample_inputs([TensorInfo("values", dtype, (n,), domain=domain)], 1, seed, where)["values"]


def sample_inputs(infos, batch_size: int, seed: int, where: str = "the model",
                  domains: dict | None = None) -> dict:
    """Seeded inputs: unknown batch dims get `batch_size` (or the batch the other inputs fix,
    when they fix one), other unknown dims 8; absurd sizes (over 1 GiB an input) refused.
    `domains` (data/domains.py) draws them where the graph tells: a lookup table's keys (and
    misses), token ids within the embedding's rows, words, a ragged input's row splits, the
    serialized tf.Examples a parse op reads (data/examples.py)."""
    import numpy as np
    from graphfreeze.errors import InputError
    from graphfreeze.graph.checks.validate_values import check_feed_size

    domains = {**{i.name: i.domain for i in infos if i.domain is not None}, **(domains or {})}
    rng = np.random.default_rng(seed)
    fixed = {i.shape[0] for i in infos if i.shape and len(i.shape) > 1 and i.shape[0] is not None}
    if len(fixed) == 1:
        (batch_size,) = fixed
    feeds, ragged = {}, {}
    levels = sorted((d.level, n) for n, d in domains.items() if getattr(d, "splits_of", None))
    for level, name in levels:  # row splits first, outermost first: they fix what they split
        of = domains[name].splits_of
        rows = batch_size if level == 1 else ragged[of]
        splits = np.concatenate([[0], np.cumsum(rng.integers(1, 4, size=rows))])
        feeds[name] = splits.astype(next(i.dtype for i in infos if i.name == name))
        ragged[of] = int(splits[-1])
    for name, domain in domains.items():  # a sparse feature's indices and dense shape agree
        if getattr(domain, "sparse_part", None) == "indices":
            from graphfreeze.data.examples import sparse_parts

            indices = next(i for i in infos if i.name == name)
            shape = next(i for i in infos if getattr(domains.get(i.name), "sparse_part", None)
                         == "dense_shape" and domains[i.name].sparse_of == domain.sparse_of)
            sparse, ragged[domain.sparse_of] = sparse_parts(rng, indices, shape, batch_size)
            feeds.update(sparse)
    for info in infos:
        if info.name in feeds:
            continue
        if info.shape is None:
            node = info.name.rsplit(":", 1)[0]
            raise InputError(f"input '{info.name}' has unknown rank, so it cannot be verified; "
                             f"give its shape, e.g. --inputs '{node}[1,4]' (your model's dims), "
                             "or pass --no-verify")
        shape = [(ragged.get(info.name, batch_size) if i == 0 else 8) if d is None else d
                 for i, d in enumerate(info.shape)]
        domain = domains.get(info.name)
        if info.dtype == "string":
            check_feed_size(info.name, shape, np.dtype("S16"), where)
            if domain is not None and getattr(domain, "examples", ()):  # a parse op's input
                from graphfreeze.data.examples import serialized

                feeds[info.name] = serialized(rng, shape, domain.examples, _drawn)
                continue
            feeds[info.name] = _strings(rng, shape, domain)
            continue
        dtype = np.dtype(info.dtype)
        check_feed_size(info.name, shape, dtype, where)
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu" and domain is not None and domain.keys:
            keys = np.asarray(domain.keys)
            misses = int(keys.max()) + 1 + rng.integers(0, 5, size=shape)
            feeds[info.name] = np.where(rng.random(shape) < 0.75,
                                        rng.choice(keys, size=shape), misses).astype(dtype)
        elif dtype.kind in "iu":
            high = domain.vocabulary if domain is not None and domain.vocabulary else 10
            feeds[info.name] = rng.integers(0, high, size=shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[info.name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            raise InputError(f"input '{info.name}' has dtype {info.dtype}; pass --no-verify")
    return feeds


def _strings(rng, shape, domain):
    """Strings of `shape`: three in four the table's keys (where the input is looked up), the
    rest short words from ALPHABET; space-separated words where the model splits them."""
    import numpy as np

    keys = [k if isinstance(k, bytes) else str(k).encode() for k in
            (domain.keys if domain is not None else ())]

    def word() -> bytes:
        if keys and rng.random() < 0.75:
            return keys[rng.integers(len(keys))]
        return "".join(rng.choice(list(ALPHABET), size=rng.integers(1, 6))).encode()

    def text() -> bytes:
        if domain is not None and domain.words:
            return b" ".join(word() for _ in range(rng.integers(1, 5)))
        return word()

    count = int(np.prod(shape)) if shape else 1
    return np.array([text() for _ in range(count)], dtype=object).reshape(shape)
