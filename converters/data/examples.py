"""Seeded serialized `tf.Example`s for an input a parse op reads (data/domains: `Domain.examples`):
each feature the op declares, of its dtype, a dense one of its shape, a sparse or ragged one of
one or two values, drawn as seeded inputs of the feature's own domain are (a vocabulary's keys,
ids within an embedding's rows)."""

from __future__ import annotations

_LISTS = {"O": "bytes_list", "f": "float_list", "i": "int64_list"}  # by the values' numpy kind


def serialized(rng, shape, features, draw) -> object:
    """An object array of `shape` of serialized tf.Examples (no TensorFlow: its own protos);
    `draw(dtype, n, domain, seed, where)`: n seeded values as tensors.sample_inputs draws them."""
    import numpy as np
    from graphfreeze.proto.tf import example_pb2

    count = int(np.prod(shape)) if shape else 1
    examples = [example_pb2.Example() for _ in range(count)]
    for feature, values_domain in features:
        sizes = [_size(feature, rng) for _ in range(count)]
        values = _values(rng, feature, sum(sizes), values_domain, draw)
        kind = _LISTS[values.dtype.kind]
        at = 0
        for example, size in zip(examples, sizes, strict=True):
            slot = getattr(example.features.feature[feature.key], kind)
            slot.value.extend(values[at:at + size].tolist())
            at += size
    return np.array([e.SerializeToString(deterministic=True) for e in examples],
                    dtype=object).reshape(shape)


def _size(feature, rng) -> int:
    """How many values one example holds of `feature`: a dense one's shape (2 for a dim of any
    length), else one or two."""
    import numpy as np

    if feature.kind == "dense":
        return int(np.prod([d if d >= 0 else 2 for d in feature.shape]))
    return int(rng.integers(1, 3))


def _values(rng, feature, n: int, values_domain, draw):
    """`n` values of `feature`'s dtype, drawn as tensors.sample_inputs draws an input's (its
    `values_domain`), from `rng`."""
    from graphfreeze.proto import dtypes

    return draw(dtypes.name(feature.dtype), n, values_domain, int(rng.integers(2**31)),
                f"feature '{feature.key}'")


def sparse_parts(rng, indices, dense_shape, batch_size: int) -> tuple[dict, int]:
    """({name: value} of a parsed sparse feature's `indices` and `dense_shape` inputs
    (TensorInfos) that agree: one or two values an example, `batch_size` examples (rank 2), or
    one example (rank 1: ParseSingleExample's); how many values they index)."""
    import numpy as np
    from graphfreeze.errors import InputError

    rank = indices.shape[1] if indices.shape and len(indices.shape) == 2 else None
    rank = rank or (dense_shape.shape[0] if dense_shape.shape else None)
    if rank not in (1, 2):
        raise InputError(f"input '{indices.name}': the indices of a sparse feature of rank "
                         f"{rank or 'unknown'}, which seeded data cannot draw; give the "
                         "feature's three inputs with --verify-data, or pass --no-verify")
    rows = batch_size if rank == 2 else 1
    counts = rng.integers(1, 3, size=rows)
    at = [[r, j] for r in range(rows) for j in range(counts[r])]
    at = [[j] for _, j in at] if rank == 1 else at
    shape = [rows, int(counts.max())] if rank == 2 else [int(counts.max())]
    return ({indices.name: np.array(at, dtype=np.int64).reshape(-1, rank),
             dense_shape.name: np.array(shape, dtype=np.int64)}, len(at))
