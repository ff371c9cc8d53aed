"""OpenVINO's TensorFlow frontend (`ov.convert_model`) on a GraphDef, and its errors read: the
"No conversion rule found for operations: A, B" summary it gives for a graph it cannot convert.

The GraphDef goes to the frontend as a `.pb` file, which its C++ reader takes as a protobuf,
function library included (as it reads a SavedModel folder), without TensorFlow in this process.
Given as a GraphDef object it would import TensorFlow, import the graph into a `tf.Graph` and
read that through its Python iterator, which cannot reach a library function's body (every
`While` would be refused), gives a string constant as its Python repr (`b'red'`: every table
lookup of openvino-tokenizers would miss) and cannot hand the extension a numeric
RaggedTensorToTensor. The IR is the same either way but for its `conversion_parameters`."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile

from graphfreeze.errors import InputError, first_line
from graphfreeze.formats.openvino import tokenizers
from graphfreeze.graph.integer_matmuls import float_integer_matmuls

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
        model = ov.convert_model(model, **kwargs)
    return _constant_outputs(model, graph_def, outputs or [])


def _constant_outputs(model, graph_def, outputs: list[str]):
    """`model` with the outputs that are constants (a function of no input, folded), which the
    frontend drops, added back as results of their values."""
    import openvino.opset13 as ov_ops
    from graphfreeze.graph.consts import const_value
    from graphfreeze.graph.graphdefs import nodes_by_name

    have = {name for port in model.outputs for name in port.get_names()}
    by_name = nodes_by_name(graph_def)
    results = []
    for name in outputs:
        value = None if name in have else const_value(by_name, name)
        if value is not None:
            const = ov_ops.constant(value)
            const.output(0).get_tensor().set_names({name})
            results.append(ov_ops.result(const))
    if results:
        model.add_results(results)
    return model


@contextlib.contextmanager
def readable(graph_def):
    """A temporary `.pb` of the GraphDef, what the frontend reads (see the module docstring);
    always named `frozen.pb`, so the IR's `conversion_parameters` are the same on every run."""
    with tempfile.TemporaryDirectory(prefix="graphfreeze-openvino-") as folder:
        path = os.path.join(folder, "frozen.pb")
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString(deterministic=True))
        yield path


def to_ir(graph_def, where: str, inputs, outputs, folder: str | None = None):
    """The OpenVINO model of a frozen graph, inputs and outputs (TensorInfos) named and shaped;
    ops OpenVINO cannot take are one line naming the nodes. With `folder`, of the SavedModel
    there, read by the frontend itself (`graph_def`: the graph its files hold)."""
    try:
        if folder is not None:
            return _named(from_folder(graph_def, folder), inputs, outputs, where)
        graph_def = float_integer_matmuls(graph_def)  # Keras' int8 layers: OpenVINO errs
        return convert(graph_def, [(i.name, i.shape) for i in inputs], [o.name for o in outputs])
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 -- OpConversionFailure and other frontend errors
        ops = unconverted_ops(str(err))
        if ops:
            from graphfreeze.graph.features import parse_refusal_hint

            nodes = [f"{n.name} ({n.op})" for n in graph_def.node if n.op in ops][:5]
            extra = (tokenizers.hint() if tokenizers.needed(graph_def) else "") + \
                parse_refusal_hint(graph_def, ", ".join(ops))
            raise InputError(f"{where}: OpenVINO cannot convert op(s) "
                             f"{', '.join(ops)} (node {', '.join(nodes)}); use another target"
                             f"{extra}") from err
        raise InputError(f"{where}: OpenVINO cannot convert the graph: {first_line(err)}") from err


def from_folder(graph_def, folder: str):
    """`ov.convert_model` on a SavedModel folder (`graph_def`: the graph its files hold, for
    openvino-tokenizers' rules where they may be needed)."""
    import openvino as ov

    if tokenizers.needed(graph_def):
        tokenizers.load()
    return ov.convert_model(folder)


def _named(model, inputs, outputs, where: str):
    """`model` with each TensorInfo's name (`key:0`) added to the port its frontend named after
    the signature key; InputError when one has no such port of its own (two keys of one
    tensor share a port)."""
    for ports, infos in ((model.inputs, inputs), (model.outputs, outputs)):
        keys = [info.name.rsplit(":", 1)[0] for info in infos]
        for info, key in zip(infos, keys, strict=True):
            found = [p for p in ports if key in p.get_names()]
            if len(found) != 1 or len(set(keys) & found[0].get_names()) != 1:
                names = sorted(n for p in ports for n in p.get_names())
                raise InputError(f"{where}: OpenVINO's reading of the SavedModel has no tensor "
                                 f"of its own named '{key}' (it has {names})")
            found[0].get_tensor().add_names({info.name})
    return model
