"""export_saved_model: a SavedModel for TF Serving, weights in variables/ (no 2 GiB limit).

The frozen graph's big numeric constants become resource variables again (a VarHandleOp plus a
ReadVariableOp under the constant's own name, so every consumer is unchanged) whose values are
written as SaveV2 writes them, straight from the arrays the freeze holds apart (no copy:
proto/bundle_write.py; a model over 2 GiB takes about its weights' size); the MetaGraphDef, its
Saver and its `serving_default` signature are built without a session, so nothing runs and no
weight is copied into a TensorFlow graph.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.formats.saved_model.runtime import SERVE_TAG, SIGNATURE, keyed, open_saved_model
from graphfreeze.graph.consts import tensor_array
from graphfreeze.graph.op_libraries import runtime_needs
from graphfreeze.graph.serialize import check_public_ops
from graphfreeze.graph.skeleton import is_big_const
from graphfreeze.graph.tables import init_node
from graphfreeze.graph.weights import attached_node, is_held
from graphfreeze.io import storage
from graphfreeze.io.trees import artifact_digest
from graphfreeze.options import option
from graphfreeze.plugins import Format, Stage
from graphfreeze.proto.bundle_write import write_bundle
from graphfreeze.proto.dtypes import numpy_dtype
from graphfreeze.state import Artifact
from graphfreeze.tensors import io_infos

INIT_OP = "__saved_model_init_op"  # tensorflow.python.saved_model.constants.INIT_OP_SIGNATURE_KEY


@dataclass(frozen=True)
class SavedModelOptions:
    as_text: bool = option(False, flag="--as-text",
                           help="server: write saved_model.pbtxt (text) instead.")


def variables_graph(graph_def, held=None):
    """The graph with each big numeric constant W replaced by `W/variable` (VarHandleOp) and
    `W` = ReadVariableOp(W/variable); returns (graph_def, {W: its value}), the values of those
    held apart read from `held` (graph/weights.py), the rest put back in."""
    from graphfreeze.graph.graphdefs import free_name

    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    names = {n.name for n in graph_def.node}
    weights = {}
    for node in graph_def.node:
        if not _variable(node):
            out.node.add().CopyFrom(attached_node(node, held) if is_held(node) else node)
            continue
        weights[node.name] = held.value(node) if is_held(node) else \
            tensor_array(node.attr["value"].tensor)
        handle_name = free_name(f"{node.name}/variable", names)
        tensor = node.attr["value"].tensor
        handle = out.node.add(name=handle_name, op="VarHandleOp")
        handle.attr["dtype"].type = tensor.dtype
        handle.attr["shape"].shape.CopyFrom(tensor.tensor_shape)
        handle.attr["shared_name"].s = handle_name.encode()
        handle.attr["container"].s = b""
        read = out.node.add(name=node.name, op="ReadVariableOp", input=[handle_name])
        read.attr["dtype"].type = tensor.dtype
    return out, weights


def _variable(node) -> bool:
    """A big constant of numbers (a string table stays a constant)."""
    if not is_big_const(node):  # (first: reading attr["value"] of any other node adds it)
        return False
    dtype = numpy_dtype(node.attr["value"].tensor.dtype)
    return dtype is not None and dtype.kind in "biufc"


def meta_graph(graph_def, weights: list[str], inputs: dict, outputs: dict):
    """MetaGraphDef with a Saver for `weights` and the serving signature ({key: TensorInfo})."""
    import tensorflow as tf
    from graphfreeze.graph.session import import_graph
    from tensorflow.core.protobuf import meta_graph_pb2

    graph = import_graph(graph_def)
    with graph.as_default():
        saver = tf.compat.v1.train.Saver(
            var_list={name: graph.get_tensor_by_name(f"{name}:0") for name in sorted(weights)},
            sharded=False, allow_empty=True, write_version=tf.compat.v1.train.SaverDef.V2)
        meta = tf.compat.v1.train.export_meta_graph(
            graph=graph, saver_def=saver.as_saver_def(), clear_devices=True,
            clear_extraneous_savers=True, strip_default_attrs=False)
    meta.meta_info_def.tags.append(SERVE_TAG)
    signature = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
    for target, infos in ((signature.inputs, inputs), (signature.outputs, outputs)):
        for key, info in infos.items():
            _tensor_info(target[key], info)
    meta.signature_def[SIGNATURE].CopyFrom(signature)
    init = init_node(graph_def)
    if init:  # the loader runs it after restoring the variables: the lookup tables' contents
        meta.signature_def[INIT_OP].outputs[INIT_OP].name = init
    return meta


def _tensor_info(proto, info) -> None:
    import tensorflow as tf

    proto.name = info.name
    proto.dtype = tf.as_dtype(info.dtype).as_datatype_enum
    if info.shape is None:
        proto.tensor_shape.unknown_rank = True
    else:
        for dim in info.shape:
            proto.tensor_shape.dim.add().size = -1 if dim is None else dim


def run(state, options: SavedModelOptions):
    import tensorflow as tf
    from google.protobuf import text_format
    from tensorflow.core.protobuf import saved_model_pb2

    graph_def = state.graph_def
    check_public_ops(graph_def)
    inputs, outputs = io_infos(state)
    keyed_in, keyed_out = keyed(inputs), keyed(outputs)
    structure, weights = variables_graph(graph_def, state.weights)
    meta = meta_graph(structure, list(weights), keyed_in, keyed_out)
    model = saved_model_pb2.SavedModel(saved_model_schema_version=1)
    model.meta_graphs.add().CopyFrom(meta)

    path = state.output_path
    (export_dir,) = state.files.workdir([path])
    variables_dir = storage.join(export_dir, "variables")
    tf.io.gfile.makedirs(variables_dir)
    if weights:
        write_bundle(storage.join(variables_dir, "variables"), weights)
    if options.as_text:
        name, data = "saved_model.pbtxt", text_format.MessageToString(model).encode()
    else:
        name, data = "saved_model.pb", model.SerializeToString(deterministic=True)
    with tf.io.gfile.GFile(storage.join(export_dir, name), "wb") as f:
        f.write(data)
    sha256, size = artifact_digest([export_dir])
    artifact = Artifact(
        path=path, sha256=sha256, size=size, format=FORMAT, inputs=inputs, outputs=outputs,
        staged=export_dir, loaded=graph_def,  # its runtime probes the frozen graph (if whole)
        facts={"node_count": len(structure.node), "tags": [SERVE_TAG], "signature": SIGNATURE,
               "signature_inputs": {k: i.name for k, i in keyed_in.items()},
               "signature_outputs": {k: o.name for k, o in keyed_out.items()},
               "variables": len(weights), **runtime_needs(graph_def)[0],
               **({"init_op": init_node(structure)} if init_node(structure) else {})},
        summary=(f"signature {SIGNATURE}: inputs {', '.join(keyed_in)}; outputs "
                 f"{', '.join(keyed_out)}", *runtime_needs(graph_def)[1]))
    return dataclasses.replace(state, artifact=artifact, weights=None)  # (written: let them go)


STAGE = Stage("export_saved_model", run, "graph", "artifact", SavedModelOptions,
              "SavedModel (tag serve, signature serving_default), weights in variables/",
              suffix=".savedmodel", folder=True, source_graph=False, weights_apart=True)
FORMAT = Format("saved_model", STAGE, open=open_saved_model)
