"""`--explain`'s Model Explorer overlays, written beside the artifact: `ARTIFACT.divergence.json`
(each compared node's |diff| against the original, by the metric verification judged) and,
where the format has a per-layer overlay (`Explorer.layers`: quantized TFLite's rmse/scale per
layer), `ARTIFACT.quantization.json`. Each is one node-data file in Model Explorer's format
(node_data_builder's GraphNodeData: `name`, `results` {key: {value, bgColor, textColor}}),
applied to the graph Model Explorer opens first, keyed as the format's `Explorer.keys` says. A
format without an Explorer gets none: refused up front when no target of the run has one
(`check`), else a line in its summary.

Colours: a node within its tolerance (a layer within rounding's error) is green, paler the
smaller its error; beyond it, orange to red on a log scale; the worst node beyond it dark red.
The sidecar's `explain` names the files (what `freeze explain` and report.html read).
"""

from __future__ import annotations

import dataclasses
import json
import math

from graphfreeze.explain.graphs import node_keys

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
    format's per-layer overlay; {} for a format Model Explorer does not draw."""
    from graphfreeze.stages.verify import diverge

    explorer = artifact.format.explorer
    if explorer is None:
        return {}
    found = {}
    values = diverge.overlay_values(measured) if measured and measured.get("available") else {}
    keys = node_keys(artifact, list(values)) if values else {}
    if keys:
        measure = "mean |diff|" if measured["metric"] == "mean_abs_diff" else "max |diff|"
        found["divergence"] = node_data(
            f"{measure} against the original (tolerance {measured['tolerance']:g})",
            {keys[n]: v for n, v in values.items() if n in keys}, RED_AT["divergence"])
    layered = explorer.layers(artifact.staged or artifact.path, artifact.facts) \
        if explorer.layers else None
    if layered:
        found["quantization"] = node_data(*layered, RED_AT["quantization"])
    return found


def write(state, measured: dict | None):
    """Write the overlays of `state.artifact` beside it (in the run's transaction); the artifact
    with the sidecar's `explain` ({kind: file name}) and a line saying how to open them."""
    from graphfreeze.io import storage

    artifact = state.artifact
    if artifact.format.explorer is None:
        line = (f"no overlays: Model Explorer has no adapter for {artifact.format.name} "
                "artifacts; where it diverges is in the sidecar (`verification.divergence`)")
        return dataclasses.replace(artifact, summary=(*artifact.summary, line))
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
