"""Models that are TF2 functions (a SavedModel signature, a Keras model): frozen with TensorFlow's
own `convert_variables_to_constants_v2`, then named the way the user knows them.

The frozen graph's input placeholders are renamed to the signature's input keys (or the Keras
input layer names) and each output gets a node named after its output key, so an Android app
feeds `image` and fetches `probabilities`, not `serving_default_x` and `Identity_1`.
"""

from __future__ import annotations

from collections.abc import Callable

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.composites import implements_of, run_with_references, with_references
from graphfreeze.sources.frozen import FrozenModel, run_errors_said


class FunctionModel(FrozenModel):
    """A frozen function graph plus the original callable, which is the reference."""

    def __init__(self, kind: str, location: str, graph_file: str, graph_def,
                 inputs: list[str], outputs: list[str], call: Callable[[dict], dict]):
        super().__init__(location, graph_file, graph_def, inputs, outputs)
        self.kind = kind
        self._call = call

    def run_reference(self, graph_def, feeds: dict, fetches: list[str]) -> list:
        """The original callable on the feeds when the run uses its own inputs and outputs;
        otherwise (inner nodes named with --outputs/--inputs) the frozen graph. A composite
        function whose body is a stand-in (`graph/composites.py`) is computed by its op's
        reference, on the frozen graph's own tensors."""
        import numpy as np

        if with_references(graph_def):  # a stand-in composite: its op's reference, not the body
            return run_with_references(graph_def, feeds, fetches, super().run_reference)
        by_input = {f"{k}:0": k for k in self.default_inputs}
        by_output = {f"{k}:0": k for k in self.default_outputs}
        if set(feeds) == set(by_input) and all(f in by_output for f in fetches):
            with run_errors_said(self.graph_file):
                result = self._call({by_input[name]: value for name, value in feeds.items()})
            return [np.asarray(result[by_output[f]]) for f in fetches]
        return super().run_reference(graph_def, feeds, fetches)


def freeze_function(func, input_keys: list[str], output_keys: list[str],
                    where: str = "the model", owner=None):
    """`_freeze`, then the frozen graph checked like any read from a file: a model TensorFlow
    loads but cannot freeze into a sound graph (a broken file at `where`) is an InputError.
    Lookup tables (`graph/tables.py`) and TF-Text resources the function captures are frozen in
    (`owner` holds them)."""
    import tensorflow as tf
    from graphfreeze.graph.checks.validate import check_graph_def
    from graphfreeze.graph.tables import freeze_tables, without_initializer_lists
    from graphfreeze.graph.text_resources import freeze_text_resources

    try:
        with without_initializer_lists(func):
            graph_def = _freeze(func, input_keys, output_keys, where)
        graph_def = freeze_tables(graph_def, func, owner, where)
        graph_def = freeze_text_resources(graph_def, func, owner, where)
    except (ValueError, TypeError, KeyError, tf.errors.OpError) as err:
        broken = _misshapen_variable(func)
        if broken:
            raise InputError(f"{where}: {broken} ({first_line(err)}); the file is corrupt, "
                             "re-export the model") from err
        raise InputError(f"{where}: graphfreeze cannot freeze this model ({first_line(err)}), "
                         "a limitation of graphfreeze, not of the file: report it, or use a "
                         "peer converter (TFLiteConverter, tf2onnx) on it") from err
    check_graph_def(graph_def, where)
    return graph_def


def _misshapen_variable(func) -> str | None:
    """What is wrong with the file when a variable `func` reads cannot be read or holds a value
    of another shape than it declares (its restore broken); None when the values are sound."""
    import tensorflow as tf

    for variable in func.graph.variables:
        try:
            shape = [int(d) for d in tf.shape(variable.read_value()).numpy()]
        except tf.errors.OpError as err:
            return f"variable {variable.name} cannot be read ({first_line(err)})"
        if not variable.shape.is_compatible_with(shape):
            return f"variable {variable.name} holds a value of shape {list(shape)}, not the " \
                f"{variable.shape} it declares"
    return None


def _freeze(func, input_keys: list[str], output_keys: list[str], where: str = "the model"):
    """GraphDef of `func` with variables as constants, inputs and outputs named by the keys.

    `input_keys` follow `func.inputs` (captures excluded), `output_keys` `func.outputs`.
    Control flow stays functional (`If`/`While`); the strip stage inlines what is constant.
    """
    from graphfreeze.graph.assign_reads import refuse_assign_then_read
    from graphfreeze.graph.graphdefs import split_tensor, tensor_name
    from graphfreeze.graph.renames import rename_nodes
    from graphfreeze.graph.variable_readers import finish_readers
    from tensorflow.core.framework import node_def_pb2
    from tensorflow.python.framework import convert_to_constants as c2c

    with _composites_kept():  # convert_variables_to_constants_v2, its readers finished
        data = c2c._FunctionConverterDataInEager(  # noqa: SLF001
            func=func, lower_control_flow=False, aggressive_inlining=False)
        handles = {id(v.handle): v.name.split(":")[0] for v in func.graph.variables}
        refuse_assign_then_read(data.graph_def, where, {
            inner.op.name: handles[id(outer)] for outer, inner in func.graph.captures
            if id(outer) in handles})
        converted, indices = c2c._replace_variables_by_constants(converter_data=data)  # noqa: SLF001
        finish_readers(converted)
        frozen = c2c._construct_concrete_function(func, converted, indices)  # noqa: SLF001
    graph_def = frozen.graph.as_graph_def()
    for fdef in graph_def.library.function:
        if implements_of(fdef) is not None and fdef.attr.pop(_MARK, None) is not None:
            fdef.attr.pop("_noinline", None)  # as the model had them (`_composites_kept`)
            fdef.attr.pop("_nospecialize", None)
        # grappler's own mark on the functions it specialized, which TensorFlow's SavedModel
        # loader refuses ("Allowlist does not support `_GrapplerSpecializedFunc`")
        fdef.attr.pop("_GrapplerSpecializedFunc", None)
    placeholders = [t.op.name for t in frozen.inputs[:len(input_keys)]]
    if len(frozen.outputs) != len(output_keys):
        raise ValueError(f"{len(frozen.outputs)} outputs but {len(output_keys)} output names")
    outputs = [t.name for t in frozen.outputs]
    for mapping in (dict(zip(placeholders, input_keys, strict=True)),
                    {k: f"{k}/original" for k in output_keys}):  # output keys: free the names
        taken = {n.name for n in graph_def.node}
        graph_def, done = rename_nodes(graph_def, {k: v for k, v in mapping.items() if k in taken})
        outputs = [tensor_name(done.get(split_tensor(o)[0], split_tensor(o)[0]),
                               split_tensor(o)[1]) for o in outputs]
    for key, source, tensor in zip(output_keys, outputs, frozen.outputs, strict=True):
        node = graph_def.node.add()
        node.CopyFrom(node_def_pb2.NodeDef(name=key, op="Identity", input=[source]))
        node.attr["T"].type = tensor.dtype.as_datatype_enum
    return graph_def


_MARK = "_graphfreeze_noinline"


class _composites_kept:
    """Grappler's function inlining (which `convert_variables_to_constants_v2` runs) with the
    composite functions (`_implements`) marked `_noinline`, so a call TFLite's converter fuses
    into its op stays a call. TensorFlow gives no option for it: its own TFLiteConverter goes
    through a SavedModel instead. The mark goes where TensorFlow builds the GraphDef it inlines
    (`disable_lower_using_switch_merge`, which it calls on it first). That function leaves
    `Case` out, so grappler lowered a `tf.switch_case` to `_SwitchN`/`Merge`, which no target's
    converter takes inside a loop: a Case is kept functional too."""

    def __enter__(self):
        from graphfreeze.graph.graphdefs import all_nodes
        from tensorflow.python.framework import convert_to_constants as c2c

        self._module, self._saved = c2c, c2c.disable_lower_using_switch_merge
        saved = self._saved

        def marked(graph_def):
            graph_def = saved(graph_def)
            for node in all_nodes(graph_def):
                if node.op in ("Case", "StatelessCase"):
                    node.attr["_lower_using_switch_merge"].b = False
            for fdef in graph_def.library.function:
                if implements_of(fdef) is not None and "_noinline" not in fdef.attr:
                    fdef.attr["_noinline"].b = True  # kept a call, and not specialized:
                    fdef.attr["_nospecialize"].b = True  # the converter checks its signature
                    fdef.attr[_MARK].b = True
            return graph_def

        c2c.disable_lower_using_switch_merge = marked
        return self

    def __exit__(self, *exc):
        self._module.disable_lower_using_switch_merge = self._saved
