"""TensorFlow's TFLiteConverter on a frozen graph, and its failures read: the ops it names
(`tf.X` neither a custom op nor a flex op, the Select/Custom summaries) and the node and words
of its MLIR diagnostics, which it prints to the native stderr rather than into the exception."""

from __future__ import annotations

import contextlib
import re

from graphfreeze.errors import InputError, first_line
from graphfreeze.formats.tflite.composites import composite_converter, renamed
from graphfreeze.formats.tflite.litert_calibration import in_litert
from graphfreeze.formats.tflite.qat import is_qat, qat_converter
from graphfreeze.formats.tflite.selective import calibrate
from graphfreeze.formats.tflite.tensor_lists import static_element_shapes
from graphfreeze.graph.composites import composite_calls
from graphfreeze.graph.integer_matmuls import float_integer_matmuls
from graphfreeze.graph.tables import has_tables, saved_model_converter


def converter(graph_def, state, options, inputs, samples=None):
    """TFLiteConverter for `options`; int8 calibrates on `samples` (default: from options)."""
    import tensorflow as tf

    graph_def = float_integer_matmuls(graph_def)  # Keras' int8 layers: TFLite lacks them
    # an unknown batch converts as 1 (verification resizes it); an input with another unknown
    # dimension keeps them all dynamic (-1), as TFLiteConverter keeps a SavedModel's (a batch
    # of 1 beside a dynamic length does not resize), and the interpreter is resized to the data
    shapes = [(ref.node, [-1 if d is None and None in info.shape[1:] else 1 if d is None else d
                          for d in info.shape])
              for ref, info in zip(state.inputs, inputs, strict=True)]
    if shapes:  # recurrent loops' TensorLists get the element shapes these inputs give
        graph_def = static_element_shapes(graph_def, dict(shapes))
    if learned_ranges(graph_def, options):
        conv = qat_converter(graph_def, [(ref.name, info.dtype, [None if d == -1 else d
                                                                  for d in shape])
                                         for ref, info, (_, shape)
                                         in zip(state.inputs, inputs, shapes, strict=True)],
                             [ref.name for ref in state.outputs], options.quantize == "int8")
        ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if samples is not None:  # a partly QAT model: its other layers are calibrated
            conv.representative_dataset = lambda: iter(samples)
            ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.target_spec.supported_ops = ops + ([tf.lite.OpsSet.SELECT_TF_OPS]
                                                if options.allow_tf_ops else [])
        return conv
    if shapes and dynamic(graph_def, inputs):  # TFLiteConverter's SavedModel path
        conv = saved_model_converter(graph_def, [ref.name for ref in state.inputs],
                                     [ref.name for ref in state.outputs])
    elif shapes and composite_calls(graph_def):  # kept for the converter to fuse (composites.py)
        conv = composite_converter(graph_def, shapes, [ref.name for ref in state.outputs])
    elif shapes:
        conv = tf.compat.v1.lite.TFLiteConverter(
            graph_def, None, None, input_arrays_with_shape=shapes,
            output_arrays=[ref.node for ref in state.outputs])
    else:  # no inputs (output = variable * 2): the converter takes arrays only with inputs
        from graphfreeze.graph.session import import_graph

        graph = import_graph(graph_def)
        conv = tf.compat.v1.lite.TFLiteConverter(
            graph_def, [], [graph.get_tensor_by_name(ref.name) for ref in state.outputs])
    ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if options.quantize == "fp16":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    elif options.quantize == "dynamic":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    elif options.quantize in ("int8", "int16x8"):
        if samples is None:
            samples = options.samples(inputs)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: iter(samples)
        conv._experimental_disable_per_channel = options.per_tensor  # noqa: SLF001
        int16 = options.quantize == "int16x8"
        ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
               if int16 else tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io = tf.float32 if options.io_type == "float" else tf.int16 if int16 else \
            tf.uint8 if options.io_type == "uint8" else tf.int8
        conv.inference_input_type = conv.inference_output_type = io
        if options.quantize == "int8":  # calibrated only: `int8` quantizes it (--keep-float)
            calibrate(conv)
    if options.allow_tf_ops:
        ops.append(tf.lite.OpsSet.SELECT_TF_OPS)
    conv.target_spec.supported_ops = ops
    return conv


def dynamic(graph_def, inputs) -> bool:
    """Graphs converted as TFLiteConverter converts their SavedModel: with lookup tables (an
    initializer subgraph fills them) or ragged inputs (their lengths vary per call)."""
    from graphfreeze.data.domains import domains

    return has_tables(graph_def) or any(d.splits_of for d in domains(graph_def, inputs).values())


def learned_ranges(graph_def, options) -> bool:
    """A quantization-aware-trained graph (FakeQuant ops) on an integer or float target: it
    converts as TensorFlow converts QAT models, int8 with the ranges it learned (fp16 keeps the
    float conversion)."""
    return options.quantize != "fp16" and is_qat(graph_def)


def convert(state, options, inputs, samples=None) -> bytes:
    """The flatbuffer; TF-Text ops go in as TF-Text's TFLite custom ops (`text_ops`)."""
    from graphfreeze.formats.tflite import text_ops

    conv = converter(state.graph_def, state, options, inputs, samples)
    where = state.model.graph_file
    text_ops.prepare(conv, state.graph_def, where)
    with in_litert([ref.node for ref in state.inputs]) if options.quantize == "int8" and \
            needs_litert(state.graph_def, inputs) else contextlib.nullcontext():
        model = run_converter(conv, where, options.allow_tf_ops, state.graph_def)
    if getattr(conv, "allow_custom_ops", False):
        text_ops.check_custom_ops(model, where)
    if hasattr(conv, "graphfreeze_folder"):  # composites' SavedModel: the graph's names back
        model = renamed(model, [ref.node for ref in state.inputs])
    return model


def needs_litert(graph_def, inputs) -> bool:
    """Whether int8 calibration must run in LiteRT (`litert_calibration`): string inputs, which
    TFLite's calibrator cannot take, or lookup tables, which it leaves empty."""
    return has_tables(graph_def) or any(i.dtype == "string" for i in inputs)


def run_converter(conv, where: str, allow_tf_ops: bool, graph_def=None) -> bytes:
    """conv.convert(); a converter that fails on the model is an InputError naming the op(s) it
    cannot take (and, for a tf.Example parse op of `graph_def`, the features it parses as the
    inputs instead), or the node and the converter's own words (its MLIR diagnostics)."""
    from graphfreeze.graph.features import parse_refusal_hint

    with captured_native_stderr() as log:
        try:
            return conv.convert()
        except Exception as err:  # noqa: BLE001 -- ConverterError, ValueError, RuntimeError
            failure = err
    text = f"{failure}\n{log[0] if log else ''}"
    flex, nowhere = converter_error_ops(text)
    if nowhere:
        raise InputError(
            f"{where}: TFLite has no kernel for op(s) {', '.join(nowhere)}, not even with "
            "--allow-tf-ops; leave them out of --outputs or use another target") from failure
    if flex and not allow_tf_ops:
        raise InputError(
            f"{where}: TFLite builtins cannot take op(s) {', '.join(flex)}; pass --allow-tf-ops "
            "to run them with TensorFlow kernels (SELECT_TF_OPS, a bigger runtime), or use "
            f"another target{parse_refusal_hint(graph_def, ', '.join(flex))}") from failure
    why = converter_failure(text) or first_line(failure)
    raise InputError(f"{where}: the TFLite converter fails on the model at {why}; leave that "
                     "part out of --outputs, or use another target") from failure


def converter_error_ops(message: str) -> tuple[list[str], list[str]]:
    """(ops SELECT_TF_OPS would run, ops no TFLite kernel runs) from a converter error.

    TF 2.21 says "'tf.X' op is neither a custom op nor a flex op" of every op outside the allowed
    sets; its summary lines tell them apart: `TF Select ops: A, B` (Flex runs them) and `Custom
    ops: C` (nothing does). Without those lines, the wording alone decides."""
    select = _listed(message, "TF Select ops")
    custom = _listed(message, "Custom ops")
    found = set(re.findall(r"\btf\.([A-Z]\w*)", message))
    found |= set(re.findall(r"\bFlex([A-Z]\w*)", message))
    if select or custom:
        return sorted((found | select) - (custom - select)), sorted(custom - select)
    nowhere = set(re.findall(r"tf\.([A-Z]\w*)'? op is neither a custom op nor a flex op", message))
    return sorted(found - nowhere), sorted(nowhere)


def _listed(message: str, label: str) -> set[str]:
    """Op names on a converter summary line `LABEL: A, B`."""
    return {op for line in re.findall(rf"^{label}: (.*)$", message, re.MULTILINE)
            for op in re.findall(r"[A-Z]\w*", line)}


@contextlib.contextmanager
def captured_native_stderr():
    """File descriptor 2 into a temporary file inside the block (the MLIR converter prints its
    diagnostics there, not into the exception); yields a list that holds the text at exit. The
    text is echoed to stderr when logs are on (--debug), dropped otherwise."""
    import os
    import sys
    import tempfile
    import warnings

    from graphfreeze.process.quiet import logs_off

    text: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield text
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text.append(sink.read().decode("utf-8", "replace"))
            if not logs_off():
                sys.stderr.write(text[0])


def converter_failure(message: str) -> str | None:
    """`node 'X': 'tfl.op' op what went wrong` from the converter's MLIR diagnostics
    (`loc("X"): error: ...` or `error: loc("X"): ...`), type dumps left out; None if none."""
    match = re.search(r'error: loc\("([^"]+)"\): (.+)', message) or \
        re.search(r'loc\("([^"]+)"\)[^\n]*?: error: (.+)', message)
    if match is None:
        match = re.search(r"^(?:\S*: )?error: ()(.+)$", message, re.MULTILINE)
        if match is None:
            return None
    node, what = match.group(1), match.group(2).strip()
    what = re.split(r": (?=[!%]|tensor<)", what)[0].rstrip(":; ")
    return f"node '{node}': {what}" if node else what
