"""The full-int8 path of export_tflite: calibrate once, set the activation ranges
(--calibration-ranges), quantize with the layers --keep-float names kept in float
(`selective`), and give the artifact what --quantize-until needs: its layers ranked by
TensorFlow's QuantizationDebugger and a way to re-quantize it with other ranges or float
layers, without calibrating again."""

from __future__ import annotations

import dataclasses

from graphfreeze.formats.tflite import selective


@dataclasses.dataclass(frozen=True)
class Int8Model:
    """A calibrated model (TensorFlow's min/max ranges), the samples it was calibrated on, and
    the choices made for it."""

    raw: bytes = dataclasses.field(repr=False)
    samples: list = dataclasses.field(repr=False, compare=False)
    io_type: str = "int8"
    per_tensor: bool = False
    ranges: str = "minmax"
    nodes: tuple[str, ...] = ()  # tensors (ops' outputs) kept in float
    ops: tuple[str, ...] = ()  # op types kept in float
    held: tuple[tuple[str, str, str], ...] = ()  # (layer, op, tensor): a layer fused into it
    names: tuple[str, ...] = ()  # the graph's input nodes, in the samples' order
    memo: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def calibrated(self, ranges: str | None = None) -> bytes:
        """The calibrated model with `ranges` (default: this model's), made once."""
        ranges = ranges or self.ranges
        if ranges == "minmax":
            return self.raw
        if ranges not in self.memo:
            try:
                self.memo[ranges] = selective.averaged_ranges(self.raw, self.samples,
                                                              self.names)
            except (RuntimeError, ValueError) as err:  # the interpreter cannot run it
                from graphfreeze.errors import InputError, first_line

                raise InputError(f"--calibration-ranges {ranges}: the calibrated model cannot "
                                 f"run in LiteRT to measure them ({first_line(err)}); use "
                                 "minmax") from err
        return self.memo[ranges]

    def quantized(self, more=(), ranges: str | None = None) -> bytes:
        return selective.quantize(self.calibrated(ranges), self.io_type, self.per_tensor,
                                  [*self.nodes, *(n for n in more if n not in self.nodes)],
                                  self.ops)


def build(calibrated: bytes, options, where: str, samples: list,
          keras: str | None = None, names=(), graph_def=None) -> Int8Model:
    """The model to quantize: ranges as --calibration-ranges says, --keep-float resolved (Keras
    layer names as `keras` named their ops; a layer fused into another op found through
    `graph_def`, the graph converted: selective.resolve)."""
    model = Int8Model(calibrated, samples, options.io_type, options.per_tensor,
                      options.calibration_ranges, names=tuple(names))
    held: list = []
    nodes, ops = selective.resolve(options.keep_float, model.calibrated(), where, keras,
                                   graph_def, held) if options.keep_float else ([], [])
    return dataclasses.replace(model, nodes=tuple(nodes), ops=tuple(ops), held=tuple(held))


def held_lines(target: str, model: Int8Model) -> list[str]:
    """What --keep-float kept for a layer TFLite fused into another op: that op."""
    return [f"{target}: --keep-float {layer}: the layer has no op of its own (fused with its "
            f"neighbours); kept the {op} that holds it in float: {tensor}"
            for layer, op, tensor in model.held]


def ranked_layers(model: Int8Model, samples: list, graph_nodes, ranges: str | None) -> list[str]:
    """Every quantized layer's tensor, worst rmse/scale first, by TensorFlow's debugger on
    `samples` (the debug model is quantized from the calibration already made)."""
    from graphfreeze.formats.tflite import quant_debug

    try:
        rows = quant_debug.rows_of_model(model.calibrated(ranges), samples, graph_nodes,
                                         model.per_tensor, model.nodes, model.ops)
    except Exception as err:  # noqa: BLE001 -- TensorFlow's debugger raises anything
        from graphfreeze.errors import InputError, first_line

        raise InputError(f"--quantize-until: TensorFlow's QuantizationDebugger cannot rank this "
                         f"model's layers ({first_line(err)}); keep layers in float with "
                         "--keep-float instead") from err
    return [r["tensor"] for r in rows if r["tensor"] not in model.nodes]


class Quantizer:
    """An int8 artifact's handle for --quantize-until (see state.Artifact.quantizer): its
    layers ranked by TensorFlow's debugger, and the artifact re-quantized from the same
    calibration with layers kept in float (rewriting the staged file)."""

    def __init__(self, artifact, model: Int8Model, graph_nodes):
        self.artifact, self.model, self.graph_nodes = artifact, model, graph_nodes
        self.range_choices = (model.ranges, *(r for r in selective.RANGES if r != model.ranges))

    def layers(self, samples: list, ranges: str | None = None) -> list[str]:
        return ranked_layers(self.model, samples, self.graph_nodes, ranges)

    def requantize(self, keep: tuple[str, ...], ranges: str | None = None):
        from graphfreeze.io.trees import artifact_digest

        artifact, model = self.artifact, self.model
        with open(artifact.staged, "wb") as f:
            f.write(model.quantized(keep, ranges))
        sha256, size = artifact_digest([artifact.staged])
        facts = {**artifact.facts, "keep_float": list(dict.fromkeys([*model.nodes, *keep,
                                                                     *model.ops])),
                 "calibration_ranges": ranges or model.ranges}
        return dataclasses.replace(artifact, size=size, sha256=sha256, facts=facts)


def attach(artifact, model: Int8Model, graph_nodes):
    """`artifact` with its Quantizer and the activation ranges it was quantized with."""
    artifact = dataclasses.replace(artifact, facts={**artifact.facts,
                                                    "calibration_ranges": model.ranges})
    return dataclasses.replace(artifact, quantizer=Quantizer(artifact, model, graph_nodes))
