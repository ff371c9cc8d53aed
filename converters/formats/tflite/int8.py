"""The full-int8 path of export_tflite: calibrate once, quantize with the layers --keep-float
names kept in float (`selective`), and give the artifact what --quantize-until needs: its
layers ranked by TensorFlow's QuantizationDebugger and a way to re-quantize it."""

from __future__ import annotations

import dataclasses
import hashlib

from graphfreeze.formats.tflite import selective


@dataclasses.dataclass(frozen=True)
class Int8Model:
    """A calibrated model and the float set chosen for it."""

    calibrated: bytes
    io_type: str
    per_tensor: bool
    nodes: tuple[str, ...] = ()  # tensors (ops' outputs) kept in float
    ops: tuple[str, ...] = ()  # op types kept in float

    def quantized(self, more=()) -> bytes:
        return selective.quantize(self.calibrated, self.io_type, self.per_tensor,
                                  [*self.nodes, *(n for n in more if n not in self.nodes)],
                                  self.ops)


def build(calibrated: bytes, options, where: str) -> Int8Model:
    nodes, ops = selective.resolve(options.keep_float, calibrated, where) \
        if options.keep_float else ([], [])
    return Int8Model(calibrated, options.io_type, options.per_tensor, tuple(nodes), tuple(ops))


def ranked_layers(model: Int8Model, samples: list, graph_nodes) -> list[str]:
    """Every quantized layer's tensor, worst rmse/scale first, by TensorFlow's debugger on
    `samples` (the debug model is quantized from the calibration already made)."""
    from graphfreeze.formats.tflite import quant_debug

    rows = quant_debug.rows_of_model(model.calibrated, samples, graph_nodes, model.per_tensor,
                                     model.nodes, model.ops)
    return [r["tensor"] for r in rows if r["tensor"] not in model.nodes]


def attach(artifact, model: Int8Model, local: str, graph_nodes):
    """`artifact` with `quantized_layers` and `requantize` (rewrites the staged file `local`)."""

    def requantize(keep: tuple[str, ...]):
        data = model.quantized(keep)
        with open(local, "wb") as f:
            f.write(data)
        facts = {**artifact.facts, "keep_float": [*model.nodes, *keep, *model.ops]}
        return dataclasses.replace(artifact, size=len(data),
                                   sha256=hashlib.sha256(data).hexdigest(), facts=facts)

    return dataclasses.replace(
        artifact, requantize=requantize,
        quantized_layers=lambda samples: ranked_layers(model, samples, graph_nodes))
