"""Which ops TFLite takes: parsed from a converter error, or probed by converting one node of
each op type (what `freeze inspect` reports for the tflite targets)."""

from __future__ import annotations

import re

from graphfreeze.errors import first_line
from graphfreeze.formats.tflite.convert import converter_error_ops
from graphfreeze.graph.op_libraries import TFLITE_KERNELS as KERNELS
from graphfreeze.graph.op_libraries import library_of, text_ops
from graphfreeze.plugins import OpGaps


def tflite_gaps(graph_def, ops: set[str]) -> OpGaps:
    """OpGaps for the tflite targets: builtins that are missing, and which of those Flex runs;
    TF-Text ops with a TF-Text TFLite kernel are no gap (they go in as custom ops)."""
    custom = sorted(o for o in ops if o in KERNELS) if text_ops(graph_def) else []
    kernelless = sorted(o for o in ops if library_of(o) and o not in KERNELS)  # Flex lacks them
    result = convert_each_op(graph_def, sorted(set(ops) - set(custom) - set(kernelless)))
    if kernelless:
        result["no_kernel"] = sorted(result["no_kernel"] + kernelless)
        result["unsupported"] = sorted(result["unsupported"] + kernelless)
    text = ", ".join(result["unsupported"]) or "all checked ops convert"
    if result["needs_allow_tf_ops"]:
        text += f" (with --allow-tf-ops: {', '.join(result['needs_allow_tf_ops'])})"
    if custom:
        text += f"; TF-Text custom ops (TF-Text's TFLite kernels): {', '.join(custom)}"
        result["text_custom_ops"] = custom
    if result["unchecked"]:
        text += f"; unchecked (only inside functions): {', '.join(result['unchecked'])}"
    return OpGaps("tflite", result["unsupported"], f"tflite builtins: {text}",
                  {k: v for k, v in result.items() if k != "unsupported"})


def convert_each_op(graph_def, ops: list[str]) -> dict:
    """Which of `ops` TFLite builtins cannot take: one node of each type (main graph) is copied
    into a small graph, its tensor inputs as placeholders of their inferred shapes and its small
    constant inputs kept, and the lot converted once. Ops only inside functions are "unchecked"."""
    import tensorflow as tf
    from graphfreeze.graph.op_probe import probe_graph
    from graphfreeze.process.quiet import native_stderr_off

    found = probe_graph(graph_def, ops)
    probe, inputs, outputs, checked = found.graph, found.inputs, found.outputs, found.checked
    unchecked = sorted(set(ops) - set(checked))
    if not outputs:
        return _probe_result([], [], unchecked)
    conv = tf.compat.v1.lite.TFLiteConverter(probe, None, None, input_arrays_with_shape=inputs,
                                             output_arrays=outputs)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS,
                                      tf.lite.OpsSet.SELECT_TF_OPS]
    try:
        with native_stderr_off():
            data = conv.convert()
    except Exception as err:  # noqa: BLE001 -- the converter's message names the ops
        _, nowhere = converter_error_ops(str(err))
        if not nowhere:
            return {**_probe_result([], [], sorted(ops)), "error": first_line(err)}
        rest = convert_each_op(graph_def, [o for o in ops if o not in nowhere])  # the others, again
        return _probe_result(rest["needs_allow_tf_ops"], rest["no_kernel"] + nowhere, rest["unchecked"])
    flex = sorted({m.decode() for m in re.findall(rb"Flex([A-Z][A-Za-z0-9]+)", data)})
    return _probe_result(flex, [], unchecked)


def _probe_result(flex: list[str], nowhere: list[str], unchecked: list[str]) -> dict:
    return {"unsupported": sorted(set(flex) | set(nowhere)), "needs_allow_tf_ops": sorted(flex),
            "no_kernel": sorted(nowhere), "unchecked": unchecked}
