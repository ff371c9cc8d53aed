"""SavedModels, TF2 (`tf.saved_model.save`) and TF1 (`SavedModelBuilder`), through one path:
`tf.saved_model.load`, the chosen signature, TensorFlow's own freezing of that function.

Inputs and outputs come from the signature: its keys become the frozen graph's input and output
node names, whatever the placeholders were called inside.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.checks.validate import check_graph_def
from graphfreeze.io import storage
from graphfreeze.options import option
from graphfreeze.plugins import Source


@dataclass(frozen=True)
class SignatureInfo:
    key: str
    inputs: dict  # key -> (tensor name, dtype name, shape list or None)
    outputs: dict


def read_saved_model_proto(path: str):
    """The SavedModel protobuf (no TensorFlow objects built); InputError if missing or broken."""
    from google.protobuf import message, text_format
    from graphfreeze.proto.tf import saved_model_pb2

    pb, pbtxt = storage.join(path, "saved_model.pb"), storage.join(path, "saved_model.pbtxt")
    model = saved_model_pb2.SavedModel()
    if storage.exists(pb):
        try:
            model.ParseFromString(storage.read_bytes(pb))
        except message.DecodeError as err:
            raise InputError(f"{pb}: not a SavedModel protobuf ({err}); the file is truncated or "
                             "corrupt, re-export the model") from err
    elif storage.exists(pbtxt):
        try:
            text_format.Parse(storage.read_bytes(pbtxt).decode("utf-8"), model)
        except (text_format.ParseError, UnicodeDecodeError) as err:
            raise InputError(f"{pbtxt}: not a text SavedModel ({err})") from err
    else:
        raise InputError(f"{path}: a SavedModel directory needs saved_model.pb (or "
                         "saved_model.pbtxt) beside variables/; it has none. Copy the whole "
                         "directory tf.saved_model.save wrote")
    if not model.meta_graphs:
        raise InputError(f"{pb}: holds no meta graph; re-export the model")
    return model


def choose(model, path: str, tag: str, signature: str):
    """The MetaGraphDef with `tag` and its `signature`; InputErrors list what is there."""
    tag_sets = [sorted(m.meta_info_def.tags) for m in model.meta_graphs]
    meta = next((m for m in model.meta_graphs if tag in m.meta_info_def.tags), None)
    if meta is None:
        have = "; ".join(",".join(t) or "(none)" for t in tag_sets)
        raise InputError(f"{path}: no meta graph tagged '{tag}' (tag sets here: {have}); "
                         "pick one with --tag")
    if signature not in meta.signature_def:
        have = ", ".join(sorted(k for k in meta.signature_def if not k.startswith("__"))) or "none"
        raise InputError(f"{path}: no signature '{signature}' under tag '{tag}' (signatures: "
                         f"{have}); pick one with --signature")
    return meta


def signatures(meta) -> list[SignatureInfo]:
    """Every signature's inputs and outputs, as the MetaGraphDef records them."""
    from graphfreeze.proto import dtypes

    def info(tensors):
        out = {}
        for key in sorted(tensors):
            t = tensors[key]
            shape = None if t.tensor_shape.unknown_rank else \
                [None if d.size < 0 else d.size for d in t.tensor_shape.dim]
            out[key] = (t.name, dtypes.name(t.dtype) if t.dtype else "?", shape)
        return out

    return [SignatureInfo(k, info(s.inputs), info(s.outputs))
            for k, s in sorted(meta.signature_def.items()) if not k.startswith("__")]


def checked_meta(path: str, tag: str, signature: str, unsafe: bool):
    """The MetaGraphDef with `tag` and `signature`, its structure checked, and unless `unsafe`
    refused if loading it could touch the host (saved_model_safety.check_saved_model)."""
    meta = choose(read_saved_model_proto(path), path, tag, signature)
    check_graph_def(meta.graph_def, storage.join(path, "saved_model.pb"))
    if not unsafe:
        from graphfreeze.graph.checks.saved_model_safety import check_saved_model

        check_saved_model(meta, path, path)
    return meta


def load(path: str, tag: str = "serve", signature: str = "serving_default",
         unsafe: bool = False):
    """The chosen signature, frozen, as a FunctionModel whose reference is the signature
    (the meta graph checked first: `checked_meta`)."""
    import numpy as np
    import tensorflow as tf
    from graphfreeze.sources.functions import FunctionModel, freeze_function

    path = path.rstrip("/")
    meta = checked_meta(path, tag, signature, unsafe)
    try:
        loaded = tf.saved_model.load(path, tags=[tag])
    except Exception as err:  # missing variables/, corrupt checkpoint, unknown ops
        check_variables(path)  # a truncated or missing file: named
        raise InputError(f"{path}: TensorFlow cannot load this SavedModel ({first_line(err)}); "
                         "check that variables/ was copied with saved_model.pb") from err
    fn = loaded.signatures[signature]
    input_keys = list(getattr(fn, "_arg_keywords", None) or
                      sorted(fn.structured_input_signature[1]))
    output_keys = sorted(fn.structured_outputs)
    graph_def = freeze_function(fn, input_keys, output_keys, storage.join(path, "saved_model.pb"),
                                owner=loaded)

    def call(feeds: dict) -> dict:
        result = fn(**{k: tf.constant(v) for k, v in feeds.items()})
        return {k: np.asarray(v) for k, v in result.items()}

    graph_file = storage.join(path, "saved_model.pb")
    model = FunctionModel("saved_model", path, graph_file, graph_def, input_keys, output_keys,
                          call)
    model.loaded = loaded  # keeps the variables the reference call reads alive
    model.notes.update(keras_notes(meta))
    return model


def check_variables(folder: str) -> None:
    """The SavedModel's variables checkpoint whole, if it has one (a fault names the file)."""
    from graphfreeze.sources.checkpoint_files import check_shards

    prefix = storage.join(folder.rstrip("/"), "variables", "variables")
    if storage.exists(prefix + ".index"):
        check_shards(prefix)
    elif storage.glob(prefix, ".data-*"):
        raise InputError(f"{prefix}.index: missing beside its data files; copy variables/ "
                         "whole with saved_model.pb")


def keras_notes(meta) -> dict:
    """The source's notes for a SavedModel tf_keras wrote: how its layers' ops are named
    (layer_names)."""
    return {"keras": "tf_keras"} if any(
        n.user_object.identifier.startswith("_tf_keras_") for n in meta.object_graph_def.nodes
        if n.WhichOneof("kind") == "user_object") else {}


def saved_model_dir(path: str) -> str:
    """The directory of a SavedModel given as the directory or as its saved_model.pb(txt)."""
    bare = path.rstrip("/")
    return storage.dirname(bare) if storage.basename(bare).startswith("saved_model.") else bare


@dataclass(frozen=True)
class SavedModelOptions:
    tag: str = option("serve", flag="--tag", metavar="TAG",
                      help="SavedModel meta graph tag (default: serve).")
    signature: str = option("serving_default", flag="--signature", metavar="KEY",
                            help="SavedModel signature (default: serving_default).")


class SavedModelSource(Source):
    name = "saved_model"
    summary = "SavedModel directory, TF1 or TF2 (saved_model.pb + variables/)"
    flag = "--saved-model"
    options = SavedModelOptions
    order = 20

    def detect(self, path: str) -> bool:
        bare = path.rstrip("/") or path
        if storage.basename(bare) in ("saved_model.pb", "saved_model.pbtxt"):
            return True
        if not storage.isdir(bare):
            return False
        names = set(storage.listdir(bare))
        if {"saved_model.pb", "saved_model.pbtxt"} & names:
            return True
        if ("variables" in names or "variables/" in names) and not any(
                n.endswith(".index") or n == "checkpoint" for n in names):
            raise InputError(f"{path}: looks like a SavedModel (it has variables/) but has no "
                             "saved_model.pb; copy the whole directory the model was saved to")
        return False

    def stem(self, path: str, options: SavedModelOptions) -> str:
        """The folder; typed from inside it (`.`, `saved_model.pb`), the folder named from its
        parent (`../NAME`), so artifacts go beside it."""
        folder = saved_model_dir(path) or "."
        if storage.is_remote(folder) or storage.basename(os.path.normpath(folder)) not in (".", ".."):
            return folder
        return os.path.normpath(os.path.join(folder, "..",
                                             os.path.basename(os.path.abspath(folder))))

    def load(self, path: str, options: SavedModelOptions, unsafe: bool):
        return load(saved_model_dir(path), options.tag, options.signature, unsafe)

    def interface(self, path: str, options: SavedModelOptions, unsafe: bool):
        """The signature (saved_model_interface.py), checked as `load` checks the meta graph
        first; None for another tag or signature than the defaults (what a reader of the
        folder takes), a remote folder, or where the graph stages have work a reader would not
        do."""
        from graphfreeze.sources.saved_model_interface import SignatureModel, read_as_is

        folder = saved_model_dir(path).rstrip("/")
        if options != SavedModelOptions() or storage.is_remote(folder):
            return None
        meta = checked_meta(folder, options.tag, options.signature, unsafe)
        if not read_as_is(meta, options.signature):
            return None
        model = SignatureModel(folder, meta, options.tag, options.signature)
        model.notes.update(keras_notes(meta))
        return model

    def files(self, path: str, options: SavedModelOptions) -> list[str]:
        return super().files(saved_model_dir(path), options)

    def scan(self, path: str, options: SavedModelOptions) -> list[InputError]:
        """Every meta graph (--tag may pick any): its structure, host ops outside the saver and
        assets outside the model (saved_model_safety.py); the variables checkpoint whole."""
        from graphfreeze.graph.checks.saved_model_safety import check_saved_model
        from graphfreeze.sources.base import faults

        folder = saved_model_dir(path)
        found = []
        for meta in read_saved_model_proto(folder).meta_graphs:
            check_graph_def(meta.graph_def, storage.join(folder, "saved_model.pb"))
            found += faults(check_saved_model, meta, folder, folder)
        return found + faults(check_variables, folder)

    def describe(self, path: str, options: SavedModelOptions, unsafe: bool) -> dict:
        from graphfreeze.graph.graphdefs import op_counts
        from graphfreeze.sources.checkpoint_files import read_index
        from graphfreeze.sources.describe import total_size

        path = saved_model_dir(path)
        proto = read_saved_model_proto(path)
        metas = [m for m in proto.meta_graphs if options.tag in m.meta_info_def.tags] or \
            list(proto.meta_graphs)
        meta = metas[0]
        check_graph_def(meta.graph_def, storage.join(path, "saved_model.pb"))
        if not unsafe:
            from graphfreeze.graph.checks.saved_model_safety import check_saved_model

            check_saved_model(meta, path, path)
        sigs = signatures(meta)
        variables_prefix = storage.join(path, "variables", "variables")
        variables = read_index(variables_prefix) \
            if storage.exists(variables_prefix + ".index") else []
        chosen = next((s for s in sigs if s.key == options.signature), sigs[0] if sigs else None)

        def tensors(items):
            return [{"key": k, "name": t[0], "dtype": t[1], "shape": t[2]}
                    for k, t in items.items()]

        return {"size_bytes": total_size([path]),
                "tag_sets": [sorted(m.meta_info_def.tags) for m in proto.meta_graphs],
                "variables": [v for v in variables if "/.ATTRIBUTES/" not in v["name"] or
                              v["name"].endswith("VARIABLE_VALUE")],
                "signatures": [{"key": s.key, "inputs": tensors(s.inputs),
                                "outputs": tensors(s.outputs)} for s in sigs],
                "inputs": tensors(chosen.inputs) if chosen else [],
                "outputs": tensors(chosen.outputs) if chosen else [],
                "flags": {}, "op_counts": op_counts(meta.graph_def, functions=True),
                "graph": meta.graph_def,
                "gap_outputs": sorted({t[0].split(":")[0] for t in chosen.outputs.values()})
                if chosen else None}


SOURCE = SavedModelSource()
