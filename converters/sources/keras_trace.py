"""A Keras model traced as Keras' own `model.export` traces it: a `tf.function` of the model in
inference mode, called with its inputs in the structure it was built with (a dict keyed by name
for keras-hub models), outputs named by the user's names (output layers, or the keys of a dict
of outputs)."""

from __future__ import annotations

from graphfreeze.errors import InputError


def trace(model, path: str = "the model"):
    """`_trace`, a model whose config TensorFlow cannot trace (a broken file) an InputError."""
    try:
        return _trace(model)
    except Exception as err:  # TypeError/ValueError "in user code: ..." from tf.function
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        raise InputError(f"{path}: TensorFlow cannot trace this Keras model "
                         f"({lines[-1] if lines else type(err).__name__}); the file is corrupt "
                         "or was saved by another Keras, re-save the model") from err


def _trace(model):
    """(concrete function of the model in inference mode, input names, output names): names as
    the user knows them (input and output layer names), unique. The model is called with its
    inputs in the structure it was built with (a dict keyed by name for keras-hub models), as
    Keras' own `model.export` calls it."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import free_name

    inputs = list(model.inputs)
    taken: set[str] = set()  # names must be unique across inputs and outputs alike
    input_names = [free_name(_input_name(t, i), taken) for i, t in enumerate(inputs)]
    output_names = [free_name(_user_name(model, n), taken) for n in _output_keys(model) or
                    getattr(model, "output_names", None) or
                    [f"output_{i}" for i in range(len(model.outputs))]]
    specs = [tf.TensorSpec(t.shape, t.dtype, name=n) for t, n in zip(inputs, input_names,
                                                                     strict=True)]

    def forward(*xs):
        return tf.nest.flatten(model(structured(model, xs), training=False))

    return tf.function(forward).get_concrete_function(*specs), input_names, output_names


def _output_keys(model) -> list[str] | None:
    """The keys of a model whose outputs are a dict (keras-hub's `sequence_output`,
    `pooled_output`), in flattening order, as Keras' `model.export` names them."""
    import tensorflow as tf

    struct = getattr(model, "_outputs_struct", None)
    if struct is None:
        struct = getattr(model, "_nested_outputs", None)
    if not isinstance(struct, dict) or len(struct) != len(model.outputs):
        return None
    return [str(k) for k in tf.nest.flatten({k: k for k in struct})]


def structured(model, xs):
    """Flat inputs `xs` (in `model.inputs` order) in the structure the model takes: its
    functional input structure (Keras 3 `_inputs_struct`, tf_keras `_nested_inputs`) when
    that is a dict or a nested structure, else a list, or one tensor."""
    import tensorflow as tf

    struct = getattr(model, "_inputs_struct", None)
    if struct is None:
        struct = getattr(model, "_nested_inputs", None)
    if isinstance(struct, dict) or (isinstance(struct, (list, tuple)) and
                                    any(isinstance(s, (list, tuple, dict)) for s in struct)):
        if len(tf.nest.flatten(struct, expand_composites=False)) == len(xs):
            return tf.nest.pack_sequence_as(struct, list(xs))
    return list(xs) if len(xs) > 1 else xs[0]


def _user_name(model, name: str) -> str:
    """A layer's own name, not that of a tfmot quantization wrapper around it (`quant_x`)."""
    try:
        layer = model.get_layer(name)
    except ValueError:
        return name
    inner = getattr(layer, "layer", None)
    return inner.name if type(layer).__name__.startswith("QuantizeWrapper") and inner else name


def _input_name(tensor, i: int) -> str:
    name = getattr(tensor, "name", None) or f"input_{i}"
    return name.split(":")[0].split("/")[0]


def variables_as_handles(fn, graph_def) -> None:
    """Make each captured variable's placeholder in `graph_def` (the traced function's) the
    VarHandleOp it stands for (its dtype and shape, from the handle's data): so TensorFlow's
    shape inference knows what its reads give (inspect's probes of MatMul and the like, which
    the placeholder's unknown shape left unprobed)."""
    from tensorflow.python.ops import handle_data_util

    variables = {id(v.handle) for v in fn.graph.variables}
    handles = {}
    for outer, inner in fn.graph.captures:
        data = handle_data_util.get_resource_handle_data(inner) \
            if id(outer) in variables else None  # (a table's handle is no variable)
        if data is not None and data.is_set and len(data.shape_and_type) == 1:
            handles[inner.op.name] = data.shape_and_type[0]
    for node in graph_def.node:
        found = handles.get(node.name)
        if found is not None and node.op == "Placeholder":
            node.op = "VarHandleOp"
            node.attr.clear()
            node.attr["dtype"].type = found.dtype
            node.attr["shape"].shape.CopyFrom(found.shape)
            node.attr["shared_name"].s = node.name.encode()
            node.attr["container"].s = b""
            node.attr["allowed_devices"].list.SetInParent()
