"""OpenVINO's TensorFlow frontend (`ov.convert_model`) on a GraphDef, and its errors read: the
"No conversion rule found for operations: A, B" summary it gives for a graph it cannot convert.

A GraphDef with a function library (the bodies of `While`/`If`, kept functional) goes to the
frontend as a `.pb` file, which it reads as a protobuf, functions included (as it reads a
SavedModel folder). Given as a GraphDef object it imports it into a `tf.Graph` and reads that
through its Python iterator, which cannot reach a library function's body (TensorFlow's
importer makes them `_DefinedFunction`s without a `graph`): every `While` would be refused.
A graph openvino-tokenizers may be needed for (strings, ragged or table ops) goes as a file
too: that iterator gives a string constant as its Python repr (`b'red'`), so every table lookup
would miss, and it cannot hand the extension a numeric RaggedTensorToTensor."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile

from graphfreeze.errors import InputError, first_line
from graphfreeze.formats.openvino import tokenizers

# its summary: ops with no rule, and ops whose rule failed (e.g. a variable not yet frozen)
_NO_RULE = re.compile(r"(?:No conversion rule found for operations?|Conversion is failed for): "
                      r"([^\n]+)")


def unconverted_ops(message: str) -> list[str]:
    """The op types an OpConversionFailure's summary names ([] when it names none)."""
    found = {op.strip() for match in _NO_RULE.finditer(message)
             for op in match.group(1).split(",") if op.strip()}
    return sorted(found)


def convert(graph_def, inputs=None, outputs=None):
    """`ov.convert_model` on a GraphDef (with openvino-tokenizers' rules where they may be
    needed, when installed); OpConversionFailure is raised as is."""
    import openvino as ov

    if tokenizers.needed(graph_def):
        tokenizers.load()

    kwargs = {}
    if inputs:
        kwargs["input"] = [(name, ov.PartialShape([-1 if d is None else d for d in shape])
                            if shape is not None else ov.PartialShape.dynamic())
                           for name, shape in inputs]
    if outputs:
        kwargs["output"] = list(outputs)
    with readable(graph_def) as model:
        return ov.convert_model(model, **kwargs)


@contextlib.contextmanager
def readable(graph_def):
    """What the frontend reads whole: the GraphDef, or with a function library or what
    openvino-tokenizers translates a temporary `.pb` of it (see the module docstring)."""
    if not graph_def.library.function and not tokenizers.needed(graph_def):
        yield graph_def
        return
    with tempfile.TemporaryDirectory(prefix="graphfreeze-openvino-") as folder:
        path = os.path.join(folder, "frozen.pb")
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
        yield path


def to_ir(graph_def, where: str, inputs, outputs):
    """The OpenVINO model of a frozen graph, inputs and outputs (TensorInfos) named and shaped;
    ops OpenVINO cannot take are one line naming the nodes."""
    from graphfreeze.graph.skeleton import run_frozen  # noqa: F401 -- TensorFlow's env first

    try:
        return convert(graph_def, [(i.name, i.shape) for i in inputs], [o.name for o in outputs])
    except Exception as err:  # noqa: BLE001 -- OpConversionFailure and other frontend errors
        ops = unconverted_ops(str(err))
        if ops:
            nodes = [f"{n.name} ({n.op})" for n in graph_def.node if n.op in ops][:5]
            extra = tokenizers.hint() if tokenizers.needed(graph_def) else ""
            raise InputError(f"{where}: OpenVINO cannot convert op(s) "
                             f"{', '.join(ops)} (node {', '.join(nodes)}); use another target"
                             f"{extra}") from err
        raise InputError(f"{where}: OpenVINO cannot convert the graph: {first_line(err)}") from err
