"""`freeze inspect`: what a model is, before converting it. Reads files; freezes nothing.

The model's source describes it (sizes, variables, signatures, likely inputs and outputs, op
counts, from the files' own records); every export stage that declares `gaps` then says which of
the graph's ops its format cannot take, judged on what inference would run.
"""

from __future__ import annotations

from graphfreeze.errors import GraphFreezeError, InputError, first_line, install_hint
from graphfreeze.io import storage

SCHEMA_VERSION = 1


def inspect(path: str, kind: str = "auto", options: dict | None = None, unsafe: bool = False,
            registry=None, on_load=lambda: None, gaps: bool = True, strict: bool = False) -> dict:
    """A JSON-ready report (stable keys, sorted) about the model at `path`. The path, kind and
    options are checked first (`strict`: options of other source kinds refused, as the CLI's
    flags are); `on_load()` is called once they are, before TensorFlow is needed (the CLI
    imports it quietly there).

    `gaps=False` (`freeze inspect --no-gaps`): no per-target gaps and no trial import, and the
    inputs' and outputs' shapes read from the graph's own records where it has them (placeholder
    shapes, `_output_shapes`): a checkpoint or frozen graph written by TensorFlow is then
    described without importing TensorFlow."""
    from graphfreeze.registry import Registry
    from graphfreeze.sources.detect import source_for

    registry = registry or Registry.default()
    from graphfreeze.io.paths import expand_paths
    from graphfreeze.options import paths_of

    path = storage.expand(path)
    path_keys = paths_of(registry.option_classes("source"))
    try:
        source, source_options = source_for(path, kind, expand_paths(options or {}, path_keys),
                                            registry, strict=strict)
    except InputError:
        found = artifact(path, registry, on_load) if kind == "auto" else None
        if found is None:
            raise
        return found
    on_load()
    from graphfreeze.sources.describe import recorded_shapes

    with recorded_shapes(not gaps):
        described = source.describe(path, source_options, unsafe)
    from graphfreeze.graph.graphdefs import gc_paused

    with gc_paused():  # a big graph's many proto wrappers, rescanned by every full collection
        return _report(path, source, described, unsafe, registry, gaps)


def artifact(path: str, registry, on_load=lambda: None) -> dict | None:
    """The report of an artifact file no source reads (.tflite, .onnx, an OpenVINO .xml), as
    the format that recognises it describes it (`Format.describe`, its runtime's own tools),
    with the sidecar graphfreeze wrote beside it, if any; None when no format does."""
    import json

    from graphfreeze.errors import ConfigError

    if not storage.exists(path):
        return None
    for fmt in registry.formats():
        if fmt.describe is None:
            continue
        on_load()
        try:
            described = fmt.describe(path)
        except ImportError as err:
            raise ConfigError(f"{path}: reading a {fmt.name} artifact needs "
                              f"{', '.join(fmt.missing()) or err.name}, not installed; "
                              f"{install_hint(fmt.extra)}") from err
        except GraphFreezeError:
            raise
        except Exception as err:  # noqa: BLE001 -- the file is untrusted: its runtime refused it
            raise InputError(f"{path}: not a readable {fmt.name} artifact ({first_line(err)}); "
                             "convert the model again") from err
        if described is None:
            continue
        report = {"schema_version": SCHEMA_VERSION, "path": path, "kind": "artifact",
                  "format": fmt.name, "size_bytes": sum(
                      storage.size(p) for p in fmt.parts(path) if storage.exists(p)),
                  **described}
        if storage.exists(f"{path}.json"):
            from graphfreeze.sidecar import golden, read

            try:
                report["sidecar"] = read(path)
                report["golden"] = golden(path, report["sidecar"])
            except InputError as err:
                report["sidecar_error"] = str(err)
        return json.loads(json.dumps(report))
    return None


def _report(path, source, described, unsafe, registry, gaps: bool = True) -> dict:
    graph_def = _drop_shape_hints(described.pop("graph"))
    candidates = described.pop("gap_outputs", None)
    from graphfreeze.graph.checks.validate_values import check_import
    from graphfreeze.graph.graphdefs import extract
    from graphfreeze.names import likely_outputs

    if not gaps:
        return {"schema_version": SCHEMA_VERSION, "path": path, "kind": source.name, **described}
    judged = gap_outputs = candidates or likely_outputs(graph_def, limit=20)
    if not unsafe:  # gaps are judged by folding constants: nothing may touch the host
        from graphfreeze.graph.checks.safety import check_graph

        checked, _ = check_graph(graph_def, judged, path)
        if checked is not graph_def:  # nodes were cut: the likely outputs may differ
            graph_def, gap_outputs = checked, candidates or likely_outputs(checked, limit=20)
    if judged:
        check_import(extract(graph_def, judged), path)
    report = {"schema_version": SCHEMA_VERSION, "path": path, "kind": source.name, **described}
    report["targets"] = {g.label: {**g.as_json(), "summary": g.line}
                         for g in op_gaps(graph_def, gap_outputs, registry, path)}
    return report


def _drop_shape_hints(graph_def):
    """The graph without `_output_shapes` attrs (in place): they are only hints, and one that
    disagrees with the node (a damaged file) makes TensorFlow refuse to import a graph inspect
    only reads."""
    for node in graph_def.node:
        node.attr.pop("_output_shapes", None)
    for function in graph_def.library.function:
        for node in function.node_def:
            node.attr.pop("_output_shapes", None)
    return graph_def


def op_gaps(graph_def, candidates, registry, where: str = "the graph") -> list:
    """OpGaps of every format some target uses (once per format; a format whose requirements
    are not installed is skipped, saying so), sorted by label. A graph
    TensorFlow cannot import there (a damaged file) is an InputError naming `where`."""
    from graphfreeze.graph import op_probe as probe
    from graphfreeze.sources.describe import compute_ops, inference_graph

    try:
        graph = inference_graph(graph_def, candidates)
    except Exception:  # noqa: BLE001 -- then judge the ops of the graph as it is
        graph = graph_def
    ops = compute_ops(graph)
    formats = {}
    for name in registry.target_names():
        for use in registry.target(name).stages:
            fmt = registry.format_of(use.use)
            if fmt is not None and fmt.gaps is not None:
                formats[fmt.name] = fmt
    try:
        return _format_gaps(graph, ops, formats, where)
    finally:
        probe.forget()  # the import the checks shared


def _format_gaps(graph, ops, formats, where) -> list:
    import tensorflow as tf
    from graphfreeze.plugins import OpGaps

    gaps = []
    for fmt in formats.values():
        missing = fmt.missing()
        if missing:  # judged by the format's own library, which is not installed
            gaps.append(OpGaps(fmt.name, [], f"{fmt.name}: skipped, needs {', '.join(missing)}: "
                               f"{install_hint(fmt.extra)}", {"skipped": True}))
            continue
        try:
            gaps.append(fmt.gaps(graph, ops))
        except (ValueError, TypeError, tf.errors.OpError) as err:
            raise InputError(f"{where}: TensorFlow cannot import the graph ({first_line(err)}); "
                             "fix or re-export the graph") from err
    return sorted(gaps, key=lambda g: g.label)


ARTIFACT_SUFFIXES = (".onnx", ".xml", ".bin", ".mlir", ".engine", ".plan")  # read, not loaded


def device_report(path: str, device: str, kind: str = "auto", options: dict | None = None,
                  unsafe: bool = False, on_load=lambda: None, outputs: tuple[str, ...] = (),
                  inputs: tuple[str, ...] = (), strict: bool = False) -> dict:
    """`freeze inspect --device gpu`: which ops the device's delegate takes and which fall back
    to the CPU, with the reason, as the format that judges `device` says (`Format.part`:
    its folder's `devices.py`). Its artifact is read as it is; a TensorFlow model is converted
    first (its `target`, cut at `outputs` and `inputs`, in a temporary folder; nothing is
    written beside it). `strict`: as `inspect`'s."""
    from graphfreeze.convert import Request
    from graphfreeze.errors import ConfigError, InputError
    from graphfreeze.registry import Registry

    registry = Registry.default()
    judges = next(d for f in registry.formats() if (d := f.part("devices", "DEVICES"))
                  and device in d.names)
    path = storage.expand(path)
    data = b""
    if not path.endswith("/") and path.lower().endswith((*judges.suffixes, *ARTIFACT_SUFFIXES)):
        data = storage.read_bytes(path)  # a missing file: the storage error names it
    if judges.recognizes(data[:8]):
        if outputs or inputs or options:
            raise ConfigError(f"{path}: a {judges.suffixes[0]} is judged as it is; --outputs, "
                              "--inputs and source flags choose how a TensorFlow model "
                              "converts: leave them out")
        on_load()
        how = f"{judges.suffixes[0].lstrip('.')} file"
    elif data:
        raise InputError(f"{path}: not a {judges.label} file; --device {device} judges "
                         f"{judges.label} models: give a {judges.suffixes[0]} artifact or the "
                         "TensorFlow model it comes from")
    else:
        request = Request(path, kind=kind, source_options=options or {}, unsafe=unsafe,
                          outputs=outputs, inputs=inputs, targets=(judges.target,),
                          verify=False, flags=strict)
        data = _converted(request, on_load, judges.suffixes[0])
        how = f"converted in memory (target {judges.target})"
    return {"schema_version": SCHEMA_VERSION, "path": path, "device": device, "judged": how,
            **judges.judge(data, device)}


def _converted(request, on_load, suffix: str) -> bytes:
    import dataclasses
    import os
    import tempfile

    from graphfreeze import plan
    from graphfreeze.convert import execute, prepare

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "model" + suffix)
        prepared = prepare(dataclasses.replace(request, output=out))
        plans = plan.build(prepared.registry, list(request.targets), skip={"verify", "benchmark"})
        on_load()
        execute(dataclasses.replace(prepared, plans=plans))
        with open(out, "rb") as f:
            return f.read()
