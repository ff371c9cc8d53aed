"""Where a converted model first differs from the original: intermediate tensors of both, on the
same seeded inputs, compared in graph order.

The original runs as verification runs it (the graph cut to the outputs, variables restored,
flags at inference values, no dropout); the artifact runs in its own runtime through its
`probe` (formats/NAME/probe.py), which answers with the TensorFlow tensor names it can map. Tensors are
compared where both have them; ops that folding renamed or fused (a batch norm folded into a
conv) have no counterpart, so the comparison moves to the nearest common tensor and the report
says how many were skipped.
"""

from __future__ import annotations

SKIP_OPS = {"Const", "Placeholder", "PlaceholderWithDefault", "NoOp"}


def reference_run(state):
    """(graph, extra feeds) the original runs as: cut to the outputs, dropout removed, flags
    fed their inference values."""
    from graphfreeze.graph.inputs import inference_subgraph
    from graphfreeze.graph.passes.dropout import remove_dropout

    graph_def, _ = remove_dropout(
        inference_subgraph(state.model.graph_def, state.keep, state.inputs), state.keep)
    present = {n.name for n in graph_def.node}
    flag_feeds = {f"{name}:0": value for name, value in state.flags.items()
                  if value is not None and name in present}
    return graph_def, flag_feeds


def measure(state, feeds: dict, tolerance: float, metric: str = "max_abs_diff") -> dict:
    """Every tensor the original and the artifact both have, compared in graph order: `rows` of
    node, op, max/mean |diff|, `allowed` (`tolerance` scaled by the tensor's magnitude when
    above 1) and `ok` (`metric` within it). What `locate` reports and the overlay draws."""
    from graphfreeze.graph.graphdefs import topo_order

    artifact = state.artifact
    ref_graph, flag_feeds = reference_run(state)
    reference_nodes = {n.name: n for n in ref_graph.node}
    order = [n for n in topo_order(state.graph_def) if n.op not in SKIP_OPS]
    common = [f"{n.name}:0" for n in order if n.name in reference_nodes
              and reference_nodes[n.name].op not in SKIP_OPS]
    unmatched = [n.name for n in order if n.name not in reference_nodes]
    try:
        got = artifact.open(keep=tuple(common)).tensors(feeds)
    except Exception as err:  # noqa: BLE001 -- a report beside the verdict: say why, go on
        from graphfreeze.errors import first_line

        return {"available": False, "why": f"its {artifact.format.name} runtime cannot run it with "
                                           f"every tensor kept ({first_line(err)})"}
    names = [c for c in common if c in got]
    expected = dict(zip(names, state.model.run_reference(ref_graph, {**feeds, **flag_feeds},
                                                         names), strict=True))
    ops = {n.name: n.op for n in order}
    rows = []
    for name in names:
        want, have = expected[name], got[name]
        if getattr(want, "dtype", None) is None or want.dtype.kind not in "fc":
            continue
        m = _compare(want, have)
        allowed = tolerance * (max(1.0, float(abs(want).max())) if want.size else 1.0)
        node = name.rsplit(":", 1)[0]
        rows.append({"node": node, "op": ops[node], "max_abs_diff": m["max_abs_diff"],
                     "mean_abs_diff": m["mean_abs_diff"], "allowed": allowed,
                     "ok": m[metric] <= allowed})
    return {"available": True, "tolerance": tolerance, "metric": metric, "rows": rows,
            "unmatched": unmatched}


def locate(state, feeds: dict, tolerance: float, metric: str = "max_abs_diff",
           limit: int = 5, measured: dict | None = None) -> dict:
    """The first nodes (graph order) whose `metric` (max or mean |diff|) is beyond `tolerance`
    (scaled by the tensor's magnitude when above 1), with max/mean |diff| and the upstream
    tensors that still agree. A JSON-ready dict (see `lines` for the terminal); `measured`:
    what `measure` found already."""
    measured = measured or measure(state, feeds, tolerance, metric)
    if not measured["available"]:
        return measured
    ok = {f"{r['node']}:0": r["ok"] for r in measured["rows"]}
    rows = [{"node": r["node"], "op": r["op"], "max_abs_diff": r["max_abs_diff"],
             "mean_abs_diff": r["mean_abs_diff"],
             "agreeing_inputs": _agreeing_inputs(state.graph_def, r["node"], ok)}
            for r in measured["rows"] if not r["ok"]][:limit]
    unmatched = measured["unmatched"]
    return {"available": True, "tolerance": tolerance, "metric": metric, "compared": len(ok),
            "not_in_original": len(unmatched), "folded_examples": unmatched[:3],
            "first": rows, "diverged": sum(not r["ok"] for r in measured["rows"])}


def overlay_values(measured: dict) -> dict:
    """{node: (|diff| by the judged metric, |diff| / allowed)}: what the Model Explorer overlay
    shows (explain/overlay.py); a ratio above 1 is a node that diverges."""
    metric = measured["metric"]
    return {r["node"]: (r[metric], r[metric] / r["allowed"] if r["allowed"] else
                        (0.0 if r[metric] == 0 else float("inf")))
            for r in measured.get("rows", ())}


def _compare(want, have) -> dict:
    """compare(), reading a 4-D tensor the runtime keeps channels-first (ONNX after tf2onnx's
    layout passes) as NCHW when that is what matches."""
    from graphfreeze.stages.verify.metrics import compare

    have = have.astype(want.dtype) if have.dtype != want.dtype else have
    tried = [compare(want, have)]
    if want.ndim == 4 and have.shape == (want.shape[0], want.shape[3], *want.shape[1:3]):
        tried.append(compare(want.transpose(0, 3, 1, 2), have))
    return min(tried, key=lambda m: m["max_abs_diff"])


def _agreeing_inputs(graph_def, node: str, ok: dict) -> list[str]:
    """The nearest compared tensors upstream of `node` that still agree (through nodes that
    were not compared: folded, fused or skipped)."""
    from graphfreeze.graph.graphdefs import is_control, nodes_by_name, split_tensor

    by_name = nodes_by_name(graph_def)
    found, seen = [], set()
    todo = [split_tensor(i)[0] for i in by_name[node].input if not is_control(i)]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        if by_name[name].op in ("Placeholder", "PlaceholderWithDefault"):
            found.append(f"{name} (input)")  # both were fed the same values
            continue
        if f"{name}:0" in ok:
            if ok[f"{name}:0"]:
                found.append(name)
            continue
        todo += [split_tensor(i)[0] for i in by_name[name].input if not is_control(i)]
    return sorted(found)


def lines(report: dict) -> list[str]:
    """The report as terminal lines (a small table)."""
    if not report.get("available"):
        return [f"divergence: not located ({report.get('why', 'no probe')})"]
    measure = "mean |diff|" if report.get("metric") == "mean_abs_diff" else "max |diff|"
    head = (f"where it diverges (compared {report['compared']} tensors in graph order, "
            f"{measure} tolerance {report['tolerance']:g}")
    if report["not_in_original"]:
        head += (f"; {report['not_in_original']} folded or fused nodes matched at the nearest "
                 f"common tensor, e.g. {', '.join(report['folded_examples'])}")
    out = [head + "):"]
    if not report["first"]:
        return out + ["  every compared tensor agrees"]
    width = max(len(r["node"]) for r in report["first"])
    out.append(f"  {'node':<{width}}  {'op':<16} {'max |diff|':>10} {'mean |diff|':>11}  "
               "upstream that agrees")
    for row in report["first"]:
        agree = ", ".join(row["agreeing_inputs"][:3]) or "-"
        out.append(f"  {row['node']:<{width}}  {row['op']:<16} {row['max_abs_diff']:>10.3g} "
                   f"{row['mean_abs_diff']:>11.3g}  {agree}")
    return out
