"""Keras models: `.keras` files (Keras 3, or tf_keras when its metadata says Keras 2) and `.h5`
files (tf_keras), frozen through a traced `tf.function` of the model in inference mode.

Loading never runs code from the file unless the user passes --unsafe: `.keras` files load in
Keras safe mode, and an `.h5` file whose config holds a `Lambda` layer (marshalled Python) is
refused. Models wrapped by tensorflow-model-optimization for pruning or clustering are stripped
of those wrappers with tfmot's own functions first; quantization-aware models keep their
fake-quant ops (they freeze into FakeQuantWithMinMaxVars, which converters understand);
cluster-preserving QAT files load as tfmot_load describes. A config naming keras-hub classes
loads with keras-hub imported (keras_objects); the model is traced as keras_trace describes.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass

from graphfreeze.errors import ConfigError, InputError, first_line
from graphfreeze.io import storage
from graphfreeze.options import option
from graphfreeze.plugins import Source
from graphfreeze.sources import keras_objects
from graphfreeze.sources.keras_config import check_keras_config, keras_writer, read_keras_config
from graphfreeze.sources.keras_trace import trace, variables_as_handles
from graphfreeze.sources.tfmot_load import (
    has_cluster_training_weights,
    load_cluster_preserved,
    tfmot_scopes,
)


def custom_objects(specs: tuple[str, ...]) -> dict:
    """`module:attr` strings -> {attr: object} (the module is imported: the user asked)."""
    objects = {}
    for spec in specs:
        module, _, attr = spec.partition(":")
        if not module or not attr:
            raise ConfigError(f"--custom-objects {spec}: write it as module:attr, e.g. "
                              "my_layers:MyDense")
        try:
            objects[attr.rsplit(".", 1)[-1]] = _getattr_path(_import(module), attr)
        except (ImportError, AttributeError) as err:
            raise ConfigError(f"--custom-objects {spec}: cannot import it ({err}); check "
                              "PYTHONPATH and the name") from err
    return objects


def _import(module: str):
    """The module, found on sys.path or else in the working directory (as `python -m` would:
    the `freeze` script's own path holds only its bin folder)."""
    import sys

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module.split(".")[0] or os.getcwd() in sys.path:
            raise
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(os.getcwd())


def _getattr_path(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def local_copy(path: str) -> tuple[str, str | None]:
    """Keras reads local files only: remote ones are copied to a temp dir first."""
    if not storage.is_remote(path):
        return path, None
    tmp = tempfile.mkdtemp(prefix="graphfreeze-")
    local = os.path.join(tmp, storage.basename(path))
    with open(local, "wb") as f:
        f.write(storage.read_bytes(path))
    return local, tmp


def _missing_object(err: Exception) -> str | None:
    """The name of the object a Keras load error says it cannot find: `Could not locate class
    'X'` (Keras 3), `Unknown layer: 'X'`, `Unknown None: 'X'` (tf_keras, e.g. a tfmot
    QuantizeConfig, whatever kind of object)."""
    match = re.search(r"(?:Could not locate \w+|Unknown [\w ]+?:)\s*'?([\w.>]+)'?", str(err))
    return match.group(1).split(">")[-1] if match else None


def _load(local: str, path: str, objects: dict, unsafe: bool):
    config = read_keras_config(local)
    if not unsafe:  # no code from the file, no layer that touches the host
        check_keras_config(config, path)
    flavour = "keras" if local.endswith(".keras") and keras_writer(local) == "keras" \
        else "tf_keras"
    keras_objects.import_packages(config, path, flavour)  # keras-hub registers its classes
    objects = keras_objects.with_full_names(objects, config)
    if flavour == "keras":
        import keras

        try:
            return keras.saving.load_model(local, custom_objects=objects, compile=False,
                                           safe_mode=not unsafe), "keras"
        except Exception as err:
            _raise_load_error(path, err, config, objects, flavour)
    import tf_keras

    safe = {"safe_mode": not unsafe} if local.endswith(".keras") else {}  # .h5: config checked
    try:
        with tfmot_scopes():
            return tf_keras.models.load_model(local, custom_objects=objects, compile=False,
                                              **safe), "tf_keras"
    except Exception as err:
        if "Weight count mismatch" in str(err) and not local.endswith(".keras") and \
                has_cluster_training_weights(local):  # tfmot CQAT: see tfmot_load
            try:
                return load_cluster_preserved(local, json.dumps(config), objects, path), \
                    "tf_keras"
            except InputError:
                raise
            except Exception as again:
                _raise_load_error(path, again, config, objects, flavour)
        _raise_load_error(path, err, config, objects, flavour)


def _raise_load_error(path: str, err: Exception, config: dict, objects: dict, flavour: str):
    unregistered = keras_objects.missing(config, objects, flavour)
    if unregistered:
        raise InputError(keras_objects.missing_message(path, unregistered)) from err
    missing = _missing_object(err)
    if missing:
        raise InputError(f"{path}: needs the custom object '{missing}'; pass --custom-objects "
                         f"MODULE:{missing}") from err
    if "safe_mode" in str(err) or "unsafe" in str(err).lower():
        raise InputError(f"{path}: loading would run Python code stored in the file (a lambda); "
                         "pass --unsafe if you trust this file") from err
    unloaded = _unloaded_quantized(err, config)
    if unloaded:
        raise InputError(f"{path}: Keras itself cannot load this model back (keras.saving."
                         f"load_model: the weights of {unloaded} do not fit the layers it "
                         "rebuilds): model.quantize() quantized layers inside another layer "
                         "whose config does not record it; convert the model saved before "
                         "model.quantize() with an integer target (edge-int8, tflite-dynamic, "
                         "onnx-int8)") from err
    raise InputError(f"{path}: Keras cannot load this model ({first_line(err)})") from err


def _unloaded_quantized(err: Exception, config: dict) -> str | None:
    """The layers Keras could not load the weights of (`A total of N objects could not be
    loaded`, as `class name`), when the config holds model.quantize()'s dtype policies."""
    from graphfreeze.sources.keras_config import objects

    text = str(err)
    if "could not be loaded" not in text or not any(
            str(obj.get("class_name", "")).startswith("Quantized") for obj in objects(config)):
        return None
    listed = text.split("List of objects that could not be loaded:")[-1]
    layers = re.findall(r"<(\w+) name=([\w.-]+)", listed)
    return ", ".join(f"{cls} {name}" for cls, name in layers) or "some layers"


def strip_training_wrappers(model):
    """tfmot's pruning and clustering wrappers off (their own strip functions); names of what
    was stripped."""
    classes = {type(layer).__name__ for layer in getattr(model, "layers", [])}
    stripped = []
    if "PruneLowMagnitude" in classes:
        import tensorflow_model_optimization as tfmot

        model = tfmot.sparsity.keras.strip_pruning(model)
        stripped.append("pruning")
    if classes & {"ClusterWeights", "ClusterWeightsMHA", "ClusterWeightsRNN"}:
        import tensorflow_model_optimization as tfmot

        model = tfmot.clustering.keras.strip_clustering(model)
        stripped.append("clustering")
    return model, stripped


def open_model(path: str, custom: tuple[str, ...] = (), unsafe: bool = False):
    """(Keras model with tfmot training wrappers stripped, notes) from a .keras or .h5 file."""
    if not storage.exists(path):
        raise InputError(f"{path}: file not found; check the path")
    objects = custom_objects(custom)
    local, tmp = local_copy(path)
    try:
        model, flavour = _load(local, path, objects, unsafe)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    model, stripped = strip_training_wrappers(model)
    return model, {"keras": flavour, "stripped": stripped}


def load(path: str, custom: tuple[str, ...] = (), unsafe: bool = False):
    import numpy as np
    import tensorflow as tf
    from graphfreeze.sources.functions import FunctionModel, freeze_function

    model, notes = open_model(path, custom, unsafe)
    fn, input_names, output_names, declared = trace(model, path)
    if declared is not None:  # the size it was traced at, where the model declares it
        notes["traced_at"] = {"shapes": [list(s) for s in declared[0]], "from": declared[1]}
    graph_def = freeze_function(fn, input_names, output_names, path)

    def call(feeds: dict) -> dict:
        """The model on `feeds` (shaped by the placeholders of `fn`'s own graph), through its
        traced inference function: one graph run, ~1.5x faster than calling it eagerly, and it
        does not hold the GIL between ops while the export runs beside it."""
        out = fn(*[tf.constant(feeds[n]) for n in input_names])  # an OpError: failed_run's
        return {n: np.asarray(v) for n, v in zip(output_names, out, strict=True)}

    result = FunctionModel("keras", path, path, graph_def, input_names, output_names, call)
    result.keras_model = model
    result.notes.update(notes)
    return result


@dataclass(frozen=True)
class KerasOptions:
    custom_objects: tuple[str, ...] = option((), flag="--custom-objects", metavar="MODULE:ATTR",
                                             help="Keras custom layer/function to load with "
                                                  "(repeatable).")


class KerasSource(Source):
    name = "keras"
    summary = "Keras model file (.keras, .h5)"
    flag = "--keras"
    options = KerasOptions
    order = 30

    def detect(self, path: str) -> bool:
        return path.rstrip("/").endswith((".keras", ".h5", ".hdf5")) and storage.exists(path)

    def stem(self, path: str, options: KerasOptions) -> str:
        return re.sub(r"\.(keras|h5|hdf5)$", "", path)

    def load(self, path: str, options: KerasOptions, unsafe: bool):
        return load(path, options.custom_objects, unsafe)

    def scan(self, path: str, options: KerasOptions) -> list[InputError]:
        """The layer config, read without Keras: structure, Lambda and host-touching layers."""
        from graphfreeze.sources.base import faults

        local, tmp = local_copy(path)  # Keras files are read locally
        try:
            config = read_keras_config(local)  # parses and checks the config's structure
        finally:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
        return faults(check_keras_config, config, path)

    def describe(self, path: str, options: KerasOptions, unsafe: bool) -> dict:
        """From the loaded model and its traced (not frozen) inference graph."""
        from graphfreeze.graph.graphdefs import op_counts
        from graphfreeze.sources.describe import total_size

        model, notes = open_model(path, options.custom_objects, unsafe)
        fn, input_names, output_names, _ = trace(model, path)
        graph_def = fn.graph.as_graph_def()
        counts = op_counts(graph_def, functions=True)  # (the traced graph's, as Keras made it)
        variables_as_handles(fn, graph_def)

        def tensors(names, specs):
            return [{"name": f"{n}:0", "dtype": t.dtype.name,
                     "shape": None if t.shape.rank is None else t.shape.as_list()}
                    for n, t in zip(names, specs, strict=True)]

        weights = [{"name": w.path if hasattr(w, "path") else w.name, "shape": list(w.shape),
                    "dtype": w.dtype if isinstance(w.dtype, str) else w.dtype.name,
                    "bytes": int(w.numpy().nbytes)} for w in model.weights]
        return {"size_bytes": total_size([path]), "keras": notes, "variables": weights,
                "signatures": [], "inputs": tensors(input_names, fn.inputs[:len(input_names)]),
                "outputs": tensors(output_names, fn.outputs), "flags": {},
                "op_counts": counts, "graph": graph_def,
                "gap_outputs": [t.op.name for t in fn.outputs]}


SOURCE = KerasSource()
