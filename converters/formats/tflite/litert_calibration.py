"""Calibration in LiteRT's own interpreter, for models TFLite's calibrator cannot run: string
inputs (its FeedTensor crashes on them) and lookup tables (it never runs the initializer
subgraph that fills them, so every lookup misses). TFLiteConverter's step is kept -- the float
model it made, min/max over every sample of each float tensor an op of the main graph reads or
writes, written where its calibrator writes them (the tensors' quantization min/max) -- but the
samples run in LiteRT, which runs both. Unlike TFLite's calibrator it records the main graph
only: ops in `If` branches stay float (export warns, `qat.float_ops`)."""

from __future__ import annotations

import contextlib
import threading

_SWAP = threading.Lock()


class LiteRTCalibrator:
    """TensorFlow's `optimize.calibrator.Calibrator` as TFLiteConverter calls it (`calibrate`
    only: graphfreeze quantizes the calibrated model itself, `selective.quantize`)."""

    names: list[str] = []  # the graph's inputs (nodes), in the samples' order

    def __init__(self, model_content: bytes, *_registerers):
        self.model = bytes(model_content)

    def calibrate(self, dataset_gen) -> bytes:
        """The model with each float tensor's min/max over the samples (lists in the order of
        `names`, matched to the model's inputs by name: `interpreter.by_name`)."""
        ranges: dict[int, tuple[float, float]] = {}
        for interp in runs(self.model, dataset_gen(), self.names):
            for i in _float_tensors(interp):
                if (found := span(interp, i)) is not None:
                    old = ranges.get(i, found)
                    ranges[i] = (min(old[0], found[0]), max(old[1], found[1]))
        return with_ranges(self.model, ranges)


def span(interp, index: int) -> tuple[float, float] | None:
    """(min, max) of a tensor after a run; None if it is empty or was never computed (a
    loop's state the interpreter freed)."""
    try:
        value = interp.get_tensor(index)
    except ValueError:
        return None
    return (float(value.min()), float(value.max())) if value.size else None


def runs(model: bytes, samples, names=()):
    """The interpreter (all tensors kept) after each run of `model` on a sample (a list of
    arrays in the order of the graph's input nodes `names`, else of the model's inputs), each
    input resized to the sample's shape."""
    import numpy as np
    from graphfreeze.formats.tflite.interpreter import by_name, interpreter
    from graphfreeze.process.quiet import native_stderr_off

    interp = interpreter(model_content=model, preserve_all_tensors=True)
    listed = interp.get_input_details()
    named = by_name(listed, list(names)) if len(names) == len(listed) else {}
    details = [named[n] for n in names] if named else listed
    for sample in samples:
        with native_stderr_off():
            for detail, value in zip(details, sample, strict=True):
                interp.resize_tensor_input(detail["index"], np.shape(value))
            interp.allocate_tensors()
            for detail, value in zip(details, sample, strict=True):
                interp.set_tensor(detail["index"], np.asarray(value).astype(detail["dtype"]))
            interp.invoke()
        yield interp


def with_ranges(model: bytes, ranges: dict) -> bytes:
    """`model` with {tensor index: (min, max)} of its main subgraph as the tensors'
    quantization min/max (where TFLite's calibrator writes them)."""
    import numpy as np
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    parsed = flatbuffer_utils.convert_bytearray_to_object(bytearray(model))
    tensors = parsed.subgraphs[0].tensors
    for i, (low, high) in ranges.items():
        if tensors[i].quantization is None:
            tensors[i].quantization = schema.QuantizationParametersT()
        tensors[i].quantization.min = np.array([low], np.float32)
        tensors[i].quantization.max = np.array([high], np.float32)
    return bytes(flatbuffer_utils.convert_object_to_bytearray(parsed))


def _float_tensors(interp) -> list[int]:
    """The float32 tensors the main subgraph's ops read or write."""
    import numpy as np

    used = {int(i) for op in interp._get_ops_details()  # noqa: SLF001
            for i in (*op["inputs"], *op["outputs"]) if int(i) >= 0}
    return sorted(d["index"] for d in interp.get_tensor_details()
                  if d["index"] in used and d["dtype"] == np.float32)


@contextlib.contextmanager
def in_litert(names: list[str]):
    """TFLiteConverter's calibration run in LiteRT (`LiteRTCalibrator`) while converting, on
    samples given in the order of the graph's input nodes `names`."""
    from tensorflow.lite.python.optimize import calibrator

    with _SWAP:  # one conversion at a time holds the module's class
        saved = calibrator.Calibrator
        calibrator.Calibrator = type("Calibrator", (LiteRTCalibrator,), {"names": list(names)})
        try:
            yield
        finally:
            calibrator.Calibrator = saved
