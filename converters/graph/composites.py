"""Composite functions: library functions annotated `_implements` (`tf.function(
experimental_implements=...)`), which a converter replaces by one fused op. TFLite's converter
(its prepare-composite-functions pass) turns `TFLite_Detection_PostProcess` into its custom op,
`non_max_suppression_padded_v2` (TensorFlow's own padded NMS) or `LSTMCellSimple` into builtins.
A composite is never inlined silently: its body may be the computation (TensorFlow's NMS), which
targets without the op may inline (and say so), or a stand-in (Model Garden's detector returns
zeros: no output depends on an argument), which only a converter that replaces it can take and
which is verified against a reference of the op (`REFERENCES`), never against its body."""

from __future__ import annotations

from dataclasses import dataclass

from graphfreeze.graph.ops import CALL_OPS

IMPLEMENTS = ("_implements", "tf._implements")


@dataclass(frozen=True)
class Composite:
    node: str  # the calling node
    function: str  # the library function it calls
    implements: str  # the op it stands for (the `_implements` name)
    attrs: dict  # the `_implements` attributes (max_detections, ...), as Python values
    stand_in: bool = False  # no output of the body depends on an argument
    inside: str = ""  # the library function holding the call ("": the graph)


def implements_of(fdef) -> tuple[str, dict] | None:
    """(name, attrs) of a FunctionDef's `_implements`, None without one."""
    for key in IMPLEMENTS:
        if key in fdef.attr:
            value = fdef.attr[key]
            if value.WhichOneof("value") == "func":
                return value.func.name, {k: _python(v) for k, v in value.func.attr.items()}
            text = value.s.decode("utf-8", "replace")
            return text.split(",")[0].strip() or fdef.signature.name, {}
    return None


def _python(value):
    kind = value.WhichOneof("value")
    if kind == "s":
        return value.s.decode("utf-8", "replace")
    return getattr(value, kind) if kind in ("i", "f", "b") else None


def composite_functions(graph_def) -> dict:
    """{function name: (implements name, attrs)} of the library's composite functions."""
    found = {}
    for fdef in graph_def.library.function:
        spec = implements_of(fdef)
        if spec is not None:
            found[fdef.signature.name] = spec
    return found


def composite_calls(graph_def) -> list[Composite]:
    """The calls of composite functions (call ops, or calls by the function's name), in the
    graph and inside library functions (`inside`)."""
    funcs = composite_functions(graph_def)
    if not funcs:
        return []
    library = {f.signature.name: f for f in graph_def.library.function}
    calls = []
    for inside, nodes in [("", graph_def.node)] + [(f.signature.name, f.node_def)
                                                   for f in graph_def.library.function]:
        for node in nodes:
            name = node.attr["f"].func.name if node.op in CALL_OPS else node.op
            if name in funcs:
                calls.append(Composite(node.name, name, *funcs[name],
                                       stand_in=is_stand_in(library[name]), inside=inside))
    return calls


def is_stand_in(fdef) -> bool:
    """No output of the body depends on an argument (Model Garden's zeros)."""
    args = {a.name for a in fdef.signature.input_arg}
    nodes = {n.name: n for n in fdef.node_def}
    seen: set[str] = set()
    todo = list(fdef.ret.values())
    while todo:
        head = todo.pop().lstrip("^").split(":")[0]
        if head in args:
            return False
        if head in seen or head not in nodes:
            continue
        seen.add(head)
        todo.extend(nodes[head].input)
    return bool(fdef.signature.input_arg)


def refusal(calls: list[Composite], where: str, target: str) -> str:
    """The one line a target that cannot take a stand-in composite says."""
    call = calls[0]
    more = f" (and {len(calls) - 1} more)" if len(calls) > 1 else ""
    at = f" in function '{call.inside}'" if call.inside else ""
    return (f"{where}: node '{call.node}'{at} calls function '{call.function}', annotated "
            f"_implements='{call.implements}'{more}, whose body is a stand-in (no output depends "
            f"on its inputs) for an op only TFLite's converter puts in; {target} cannot take it: "
            "use a tflite target (tflite, tflite-fp16, tflite-dynamic)")


# ops whose composite body is a stand-in, and the reference verification uses instead
REFERENCES = {"TFLite_Detection_PostProcess": "graphfreeze.graph.detection_postprocess"}


def with_references(graph_def) -> list[Composite]:
    """The graph's stand-in composite calls, each with a reference here (one without is an
    InputError: nothing to verify it against)."""
    from graphfreeze.errors import InputError

    calls = [c for c in composite_calls(graph_def) if c.stand_in]
    for call in calls:
        if call.implements not in REFERENCES or call.inside:
            raise InputError(
                f"node '{call.node}' calls function '{call.function}' (_implements="
                f"'{call.implements}'), whose body is a stand-in, and graphfreeze has no "
                "reference of that op to verify the converted model against; pass --no-verify")
    return calls


def run_with_references(graph_def, feeds: dict, fetches: list[str], run) -> list:
    """`run(graph_def, feeds, fetches)` with each composite call that has a reference computed
    by it, not by its body: the calls' inputs are run first, their outputs computed by the
    reference and fed in place of the calls'."""
    import importlib

    from graphfreeze.graph.graphdefs import is_control, nodes_by_name

    calls = with_references(graph_def)
    by_name = nodes_by_name(graph_def)
    args = {c.node: [i for i in by_name[c.node].input if not is_control(i)] for c in calls}
    wanted = sorted({_fetchable(t) for c in calls for t in args[c.node]})
    values = dict(zip(wanted, run(graph_def, feeds, wanted), strict=True))
    graph, names = _calls_replaced(graph_def, calls)
    fed = dict(feeds)
    for call in calls:
        module = importlib.import_module(REFERENCES[call.implements])
        outputs = module.run(call.attrs, *[values[_fetchable(t)] for t in args[call.node]])
        fed.update({f"{name}:0": value for name, value in zip(names[call.node], outputs,
                                                                strict=True)})
    return run(graph, fed, fetches)


def as_references(graph_def):
    """`graph_def` with each stand-in call that has a reference replaced by placeholders of its
    op's output shapes: what shape inference should see, since the stand-in's zeros are often
    scalars ((), where the op gives [batch, detections, 4])."""
    calls = [c for c in composite_calls(graph_def)
             if c.stand_in and not c.inside and c.implements in REFERENCES]
    try:
        return _calls_replaced(graph_def, calls, drop=False)[0] if calls else graph_def
    except (KeyError, ValueError, TypeError):  # attrs or outputs not the op's: as the body says
        return graph_def


def _calls_replaced(graph_def, calls: list[Composite], drop: bool = True) -> tuple:
    """(a copy of `graph_def` whose readers of each call read a placeholder per output instead,
    shaped as its reference's `shapes` say, the call dropped or (`drop=False`) kept unread,
    {call node: [placeholder names]})."""
    import importlib

    from graphfreeze.graph.graphdefs import nodes_by_name, replace_nodes, rewire, tensor_name

    by_name = nodes_by_name(graph_def)
    funcs = {f.signature.name: f for f in graph_def.library.function}
    mapping, placeholders, names = {}, [], {}
    for call in calls:
        shapes = importlib.import_module(REFERENCES[call.implements]).shapes(call.attrs)
        outputs = funcs[call.function].signature.output_arg
        names[call.node] = [f"{call.node}/reference_{i}" for i in range(len(outputs))]
        for i, (arg, shape, name) in enumerate(zip(outputs, shapes, names[call.node],
                                                   strict=True)):
            node = type(by_name[call.node])(name=name, op="Placeholder")
            node.attr["dtype"].type = arg.type
            for d in shape:
                node.attr["shape"].shape.dim.add().size = -1 if d is None else d
            placeholders.append(node)
            mapping[tensor_name(call.node, i)] = name
    graph = rewire(replace_nodes(graph_def, placeholders), mapping,
                   drop={c.node for c in calls} if drop else frozenset(), owned=True)
    return graph, names


def _fetchable(name: str) -> str:
    """`node:index` (a graph input `node` is its output 0)."""
    from graphfreeze.graph.graphdefs import split_tensor

    node, index = split_tensor(name)
    return f"{node}:{index}"


NMS_OPS = ("NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3",
           "NonMaxSuppressionV4", "NonMaxSuppressionV5", "NonMaxSuppressionWithOverlaps",
           "CombinedNonMaxSuppression")
NMS_COMPOSITES = ("TFLite_Detection_PostProcess", "non_max_suppression_padded_v2")


def detection_node(graph_def) -> tuple[str, str] | None:
    """(node, op) of a non-max suppression in the graph or its functions: a detector."""
    for call in composite_calls(graph_def):
        if call.implements in NMS_COMPOSITES:
            return call.node, call.implements
    for nodes in [graph_def.node] + [f.node_def for f in graph_def.library.function]:
        for node in nodes:
            if node.op in NMS_OPS:
                return node.name, node.op
    return None


def detection_outputs(graph_def, outputs) -> set[str]:
    """The output tensors (of `outputs`, names) a non-max suppression selects: they depend on an
    NMS op, an NMS composite's call, or a call of a function that runs one."""
    from graphfreeze.graph.graphdefs import functions_reached, reachable

    funcs = {f.signature.name: f for f in graph_def.library.function}
    running = {name for name, f in funcs.items() if any(n.op in NMS_OPS for n in f.node_def)}
    selecting = {n.name for n in graph_def.node
                 if n.op in NMS_OPS or running & functions_reached(funcs, [n])}
    selecting |= {c.node for c in composite_calls(graph_def)
                  if c.implements in NMS_COMPOSITES and not c.inside}
    return {name for name in outputs if reachable(graph_def, [name]) & selecting} \
        if selecting else set()
