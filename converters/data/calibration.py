"""Representative inputs for int8 calibration (TFLite, ONNX): the user's data or seeded random
samples (`CalibrationOptions.samples` is how a stage asks for them)."""

from __future__ import annotations


def calibration_samples(path: str | None, infos, count: int, scaling, seed: int = 1):
    """One sample (batch 1) per item, [array per input in `infos` order]: every row of the data
    at `path`, or `count` seeded random samples."""
    from graphfreeze.tensors import sample_inputs

    if path is None:
        return [[feeds[i.name] for i in infos]
                for feeds in (sample_inputs(infos, 1, seed + k) for k in range(count))]
    from graphfreeze.data.load import load

    return load(path, infos, scaling).samples([i.name for i in infos])
