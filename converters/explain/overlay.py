"""`--explain`'s Model Explorer overlays, written beside the artifact: `ARTIFACT.divergence.json`
(each compared node's |diff| against the original, by the metric verification judged) and, for
quantized TFLite, `ARTIFACT.quantization.json` (TensorFlow's QuantizationDebugger's rmse/scale
per layer). Each is one node-data file in Model Explorer's format (node_data_builder's
GraphNodeData: `name`, `results` {key: {value, bgColor, textColor}}), applied to the graph Model
Explorer opens first, keyed as `graphs.node_keys` says.

Colours: a node within its tolerance (a layer within rounding's error) is green, paler the
smaller its error; beyond it, orange to red on a log scale; the worst node beyond it dark red.
The sidecar's `explain` names the files (what `freeze explain` and report.html read).
"""

from __future__ import annotations

import dataclasses
import json
import math

from graphfreeze.explain.graphs import ADAPTERS, node_keys

GREENS = ("#e8f5e9", "#66bb6a")  # error / allowed from 1e-4 to 1
REDS = ("#ffcc80", "#e53935")  # from 1 to RED_AT times the allowed error
WORST = "#b71c1c"  # the worst node beyond its allowed error
RED_AT = {"divergence": 100.0, "quantization": 10.0}
KINDS = ("divergence", "quantization")


def color(ratio: float, red_at: float) -> str:
    """The background of a node whose error is `ratio` times what it may be."""
    if ratio <= 1:
        low, high = GREENS
        t = (math.log10(max(ratio, 1e-4)) + 4) / 4
    else:
        low, high = REDS
        t = min(1.0, math.log10(ratio) / math.log10(red_at))
    return _mix(low, high, t)


def _mix(low: str, high: str, t: float) -> str:
    pairs = zip(*([int(c[k:k + 2], 16) for k in (1, 3, 5)] for c in (low, high)), strict=True)
    return "#" + "".join(f"{round(a + t * (b - a)):02x}" for a, b in pairs)


def node_data(name: str, values: dict, red_at: float) -> dict:
    """A GraphNodeData: `values` {key: (shown value, error / allowed)} coloured."""
    worst = max(values, key=lambda k: values[k][1], default=None)
    results = {}
    for key, (value, ratio) in values.items():
        if key == worst and ratio > 1:
            results[key] = {"value": _shown(value), "bgColor": WORST, "textColor": "#ffffff"}
        else:
            results[key] = {"value": _shown(value), "bgColor": color(ratio, red_at)}
    return {"name": name, "results": results}


def _shown(value: float) -> float:
    return float(f"{value:.3g}") if math.isfinite(value) else 1e308


def overlays(artifact, measured: dict | None) -> dict:
    """{kind: GraphNodeData} for `artifact` from the divergence locator's `measured` and the
    artifact's per-layer quantization rows; {} for formats Model Explorer does not read."""
    from graphfreeze.formats.tflite import quant_debug
    from graphfreeze.stages.verify import diverge

    if artifact.format.name not in ADAPTERS:
        return {}
    found = {}
    values = diverge.overlay_values(measured) if measured and measured.get("available") else {}
    keys = node_keys(artifact, list(values)) if values else {}
    if keys:
        measure = "mean |diff|" if measured["metric"] == "mean_abs_diff" else "max |diff|"
        found["divergence"] = node_data(
            f"{measure} against the original (tolerance {measured['tolerance']:g})",
            {keys[n]: v for n, v in values.items() if n in keys}, RED_AT["divergence"])
    rows = artifact.facts.get("quantization_layers") or []
    if rows and artifact.format.name == "tflite":
        from graphfreeze.explain.graphs import tflite_tensors

        made = set(tflite_tensors(artifact.staged or artifact.path))
        layers = {k: v for k, v in quant_debug.overlay_values(rows).items() if k in made}
        if layers:
            found["quantization"] = node_data(
                f"int8 error per layer, rmse/scale ({quant_debug.ROUNDING:.2f} is rounding "
                "alone)", layers, RED_AT["quantization"])
    return found


def write(state, measured: dict | None):
    """Write the overlays of `state.artifact` beside it (in the run's transaction); the artifact
    with the sidecar's `explain` ({kind: file name}) and a line saying how to open them."""
    from graphfreeze.io import storage

    artifact = state.artifact
    found = overlays(artifact, measured)
    if not found:
        return artifact
    names = {}
    for kind, data in found.items():
        path = overlay_path(artifact.path, kind)
        state.files.put(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
        names[kind] = storage.basename(path)
    line = (f"overlays: {', '.join(names.values())} (open them: freeze explain "
            f"{artifact.path.rstrip('/')})")
    return dataclasses.replace(artifact, facts={**artifact.facts, "explain": names},
                               summary=(*artifact.summary, line))


def overlay_path(artifact_path: str, kind: str) -> str:
    return f"{artifact_path.rstrip('/')}.{kind}.json"
