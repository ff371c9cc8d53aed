"""`freeze inspect`: what a model is, before converting it. Reads files; freezes nothing.

The model's source describes it (sizes, variables, signatures, likely inputs and outputs, op
counts, from the files' own records); every export stage that declares `gaps` then says which of
the graph's ops its format cannot take, judged on what inference would run.
"""

from __future__ import annotations

from graphfreeze.io import storage

SCHEMA_VERSION = 1


def inspect(path: str, kind: str = "auto", options: dict | None = None, unsafe: bool = False,
            registry=None, on_load=lambda: None) -> dict:
    """A JSON-ready report (stable keys, sorted) about the model at `path`. The path, kind and
    options are checked first; `on_load()` is called once they are, before TensorFlow is needed
    (the CLI imports it quietly there)."""
    from graphfreeze.registry import Registry
    from graphfreeze.sources.detect import source_for

    registry = registry or Registry.default()
    from graphfreeze.io.paths import expand_paths
    from graphfreeze.options import paths_of

    path = storage.expand(path)
    path_keys = paths_of(registry.option_classes("source"))
    source, source_options = source_for(path, kind, expand_paths(options or {}, path_keys), registry)
    on_load()
    described = source.describe(path, source_options, unsafe)
    from graphfreeze.graph.graphdefs import gc_paused

    with gc_paused():  # a big graph's many proto wrappers, rescanned by every full collection
        return _report(path, source, described, unsafe, registry)


def _report(path, source, described, unsafe, registry) -> dict:
    graph_def = _drop_shape_hints(described.pop("graph"))
    candidates = described.pop("gap_outputs", None)
    from graphfreeze.graph.checks.validate_values import check_import
    from graphfreeze.graph.graphdefs import extract
    from graphfreeze.names import likely_outputs

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
    from graphfreeze.errors import InputError, first_line
    from graphfreeze.plugins import OpGaps

    gaps = []
    for fmt in formats.values():
        missing = fmt.missing()
        if missing:  # judged by the format's own library, which is not installed
            gaps.append(OpGaps(fmt.name, [], f"{fmt.name}: skipped, needs {', '.join(missing)}: "
                               f"pip install 'graphfreeze[{fmt.extra}]'", {"skipped": True}))
            continue
        try:
            gaps.append(fmt.gaps(graph, ops))
        except (ValueError, TypeError, tf.errors.OpError) as err:
            raise InputError(f"{where}: TensorFlow cannot import the graph ({first_line(err)}); "
                             "fix or re-export the graph") from err
    return sorted(gaps, key=lambda g: g.label)
