"""A Keras model traced as Keras' own `model.export` traces it: a `tf.function` of the model in
inference mode, called with its inputs in the structure it was built with (a dict keyed by name
for keras-hub models), outputs named by the user's names (output layers, or the keys of a dict
of outputs). A model whose layers cannot run on an input of unknown size in a TensorFlow graph
(Keras' bilinear `UpSampling2D` compares the size in Python) is traced at the size the model
declares for it elsewhere (`declared_shapes`)."""

from __future__ import annotations

import re

from graphfreeze.errors import InputError


def trace(model, path: str = "the model"):
    """(concrete function, input names, output names, the declared shapes it was traced at or
    None): `_trace` at the shapes of the model's inputs, else at those it declares elsewhere;
    a model it cannot trace either way is an InputError saying why (graphfreeze's limitation:
    Keras read the file)."""
    try:
        return (*_trace(model), None)
    except Exception as err:  # TypeError/ValueError "in user code: ..." from tf.function
        first = err
    declared = declared_shapes(model)
    if declared is not None:
        try:
            return (*_trace(model, declared[0]), declared)
        except Exception:  # noqa: BLE001 - the first failure is the one to report
            pass
    raise InputError(_cannot_trace(path, model, first, declared)) from first


def _cannot_trace(path: str, model, err: Exception, declared) -> str:
    """Why the model does not trace: the layer Keras names and the first line of its error;
    with inputs of unknown size, the fix (a fixed input size)."""
    text = re.sub(r"\x1b\[[0-9;]*m|\[[0-9;]*m", "", str(err))
    layer = re.search(r"Exception encountered when calling (\w+)\.call\(\)", text)
    lines = [ln.strip() for ln in text.split("Arguments received")[0].splitlines()
             if ln.strip()]
    after = [i + 1 for i, ln in enumerate(lines) if ln.startswith("Exception encountered")]
    # the error's own line: Keras' after its "Exception encountered", tf.function's last
    reason = lines[after[0]] if after and after[0] < len(lines) else \
        lines[-1] if lines else type(err).__name__
    reason = reason.split(". ")[0].rstrip(".")
    where = f"{layer.group(1)} fails" if layer else "it fails"
    inputs = _inputs(model)
    shapes = ", ".join(str(tuple(t.shape)) for t in inputs) or "it does not declare " \
        "(a subclassed model)"
    unknown = any(None in tuple(t.shape)[1:] for t in inputs)
    if declared is not None:
        fix = (f", and also at the size {declared[1]} declares ({declared[0]}); report it, "
               "or export it with Keras' model.export and convert that")
    elif unknown:
        fix = ("; its inputs' size is unknown and the model declares none: build it with a "
               "fixed input size (e.g. image_shape=(512, 512, 3)) and save it again")
    else:
        fix = "; report it, or export it with Keras' model.export and convert that"
    return (f"{path}: graphfreeze cannot trace this Keras model into a TensorFlow graph: "
            f"{where} on inputs {shapes} ({reason}){fix}")


def _trace(model, shapes: list[tuple] | None = None):
    """(concrete function of the model in inference mode, input names, output names): names as
    the user knows them (input and output layer names), unique. The model is called with its
    inputs in the structure it was built with (a dict keyed by name for keras-hub models), as
    Keras' own `model.export` calls it, at `shapes` (default: its inputs')."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import free_name

    inputs = list(model.inputs)
    taken: set[str] = set()  # names must be unique across inputs and outputs alike
    input_names = [free_name(_input_name(t, i), taken) for i, t in enumerate(inputs)]
    output_names = [free_name(_user_name(model, n), taken) for n in _output_keys(model) or
                    getattr(model, "output_names", None) or
                    [f"output_{i}" for i in range(len(model.outputs))]]
    shapes = shapes or [t.shape for t in inputs]
    specs = [tf.TensorSpec(s, t.dtype, name=n) for t, s, n in zip(inputs, shapes, input_names,
                                                                  strict=True)]

    def forward(*xs):
        return tf.nest.flatten(model(structured(model, xs), training=False))

    return tf.function(forward).get_concrete_function(*specs), input_names, output_names


def declared_shapes(model) -> tuple[list[tuple], str] | None:
    """(the model's input shapes with their unknown sizes as the model declares them elsewhere,
    where), or None when it declares none: the size a keras-hub preprocessor resizes images to
    (`image_converter.image_size`, as `from_preset` models have), else the input of a nested
    model fed by its single input (a keras-hub backbone's `image_shape`)."""
    shapes = [tuple(t.shape) for t in _inputs(model)]
    if not any(None in s[1:] for s in shapes):
        return None
    size = getattr(getattr(getattr(model, "preprocessor", None), "image_converter", None),
                   "image_size", None)
    if size is not None and len(size) == 2 and all(size):
        first = getattr(getattr(model.preprocessor, "image_converter", None), "data_format",
                        "channels_last") == "channels_first"
        filled = [_fill(s, (s[0], s[1], *size) if first else (s[0], *size, s[3]))
                  if len(s) == 4 else s for s in shapes]
        if filled != shapes:
            return filled, "its preprocessor's image_size"
    if len(shapes) == 1:
        for inner in _nested_models(model):
            if len(inner.inputs) == 1:
                filled = [_fill(shapes[0], tuple(inner.inputs[0].shape))]
                if filled != shapes:
                    return filled, f"the input of its nested model {inner.name}"
    return None


def _inputs(model) -> list:
    """The model's symbolic inputs; none for a subclassed model (it has no `.inputs`)."""
    return list(getattr(model, "inputs", None) or [])


def _fill(shape: tuple, declared: tuple) -> tuple:
    """`shape` with its unknown sizes (not the batch) from `declared` where it has them and
    agrees with every known one; else `shape`."""
    if len(declared) != len(shape):
        return shape
    pairs = list(zip(shape, declared, strict=True))
    if any(a is not None and b is not None and a != b for a, b in pairs):
        return shape
    return (shape[0], *(a if a is not None else b for a, b in pairs[1:]))


def _nested_models(model):
    """The models nested in `model` (layers that have inputs of their own), outermost first."""
    queue = list(getattr(model, "layers", []))
    while queue:
        layer = queue.pop(0)
        if getattr(layer, "_inputs_struct", None) is not None or \
                getattr(layer, "_nested_inputs", None) is not None:
            yield layer
            queue.extend(getattr(layer, "layers", []))


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
