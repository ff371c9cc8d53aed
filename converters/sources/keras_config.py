"""A Keras model's config, read from the file without loading the model, and checked before
any layer is built: no `Lambda` (marshalled Python), and no `TFOpLambda` calling a TensorFlow
function that touches the host.
"""

from __future__ import annotations

import json

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.checks.safety import REFUSE, host_ops

# Keras: TFOpLambda layers name the TF API function they call (`io.write_file`, `nn.relu`,
# `__operators__.add`, `reshape`). Allowed: functions in pure-math namespaces, and top-level
# ones defined in TensorFlow's array/math modules; everything else (io, py_function,
# numpy_function, print, summary, data, debugging, saved_model, compat, ...) is refused.
PURE_NAMESPACES = {"math", "nn", "linalg", "image", "signal", "random", "bitwise", "strings",
                   "sparse", "ragged", "__operators__", "dtypes"}
PURE_MODULES = {"array_ops", "array_ops_stack", "math_ops", "gen_math_ops", "gen_array_ops",
                "gen_nn_ops", "nn_ops", "linalg_ops", "gen_linalg_ops", "gen_spectral_ops",
                "clip_ops", "sort_ops", "special_math_ops", "manip_ops", "histogram_ops",
                "check_ops", "gen_string_ops"}
_NAMESPACE_USE = {"io": "reads or writes files", "py_function": "runs Python code",
                  "numpy_function": "runs Python code", "py_func": "runs Python code",
                  "print": "prints", "summary": "writes summary files", "data": "reads files",
                  "saved_model": "reads or writes files"}


def keras_function_use(function: str) -> str | None:
    """What a TFOpLambda's `function` does to the host, or None if it is pure math."""
    head, _, leaf = function.rpartition(".")
    if head.split(".")[0] in PURE_NAMESPACES:
        return None
    if not head:
        import tensorflow as tf

        module = getattr(getattr(tf, function, None), "__module__", "") or ""
        if module.rpartition(".")[2] in PURE_MODULES and module.startswith("tensorflow.python"):
            return None
    camel = "".join(p.capitalize() for p in leaf.split("_"))
    return host_ops().get(camel) or _NAMESPACE_USE.get(head.split(".")[0] or leaf) or \
        "is not a pure TensorFlow math function"


def _layers(config):
    if isinstance(config, dict):
        if "class_name" in config:
            yield config
        for value in config.values():
            yield from _layers(value)
    elif isinstance(config, list):
        for value in config:
            yield from _layers(value)


def check_keras_config(config: dict, where: str) -> None:
    """Refuse Lambda layers (Python code) and TFOpLambda layers calling non-math TF functions."""
    for layer in _layers(config):
        cls, conf = layer["class_name"], layer.get("config")
        conf = conf if isinstance(conf, dict) else {}
        name = conf.get("name", "?")
        if cls == "Lambda":
            raise InputError(f"{where}: layer '{name}' (Lambda) runs Python code stored in the "
                             f"file; {REFUSE}")
        if cls in ("TFOpLambda", "SlicingOpLambda"):
            function = str(conf.get("function", ""))
            what = keras_function_use(function)
            if what:
                raise InputError(f"{where}: layer '{name}' ({cls} tf.{function}) {what}; "
                                 f"{REFUSE}")


def read_keras_config(path: str) -> dict:
    """The model config of a local `.keras` zip (config.json) or `.h5` file (model_config),
    read without loading the model."""
    if path.endswith(".keras"):
        import zipfile

        try:
            with zipfile.ZipFile(path) as archive:
                return _config(archive.read("config.json"), path)
        except InputError:
            raise
        except Exception as err:  # BadZipFile, KeyError, OSError, EOFError, zlib.error, ...
            raise InputError(f"{path}: not a Keras .keras archive ({first_line(err)}); the file "
                             "is truncated or corrupt, re-save the model with model.save(PATH)") \
                from err
    import h5py

    try:
        with h5py.File(path, "r") as f:
            raw = f.attrs.get("model_config")
    except Exception as err:  # OSError, KeyError, RuntimeError, ... on corrupt files
        raise InputError(f"{path}: not a readable HDF5 file ({first_line(err)}); the file is "
                         "truncated or not a Keras .h5 model") from err
    if raw is None:
        raise InputError(f"{path}: an HDF5 file without a Keras model config (weights only?); "
                         "save the whole model with model.save(PATH)")
    config = _config(raw, path)
    _check_inbound_nodes(config, path)
    return config


def keras_writer(path: str) -> str:
    """Which Keras wrote a local `.keras` zip: "tf_keras" when its metadata.json says a Keras 2
    version (tf_keras, TF_USE_LEGACY_KERAS=1, tfmot users) or its config names a tf_keras
    module, else "keras" (Keras 3)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            meta = json.loads(archive.read("metadata.json")) if "metadata.json" in names else {}
            head = archive.read("config.json")[:400] if "config.json" in names else b""
    except Exception:  # a broken archive: read_keras_config names what is wrong
        return "keras"
    version = str(meta.get("keras_version", "")) if isinstance(meta, dict) else ""
    if version[:2] in ("2.", "1.") or b'"tf_keras.' in head:
        return "tf_keras"
    return "keras"


def _check_inbound_nodes(config: dict, where: str) -> None:
    """tf_keras rebuilds a functional model by retrying layers until every inbound node
    resolves: a reference no layer call can satisfy (a node index that is not a number or past
    the layer's calls) makes it loop forever. Refuse those first."""
    layers = (config.get("config") or {}).get("layers") if isinstance(config.get("config"),
                                                                      dict) else None
    if not isinstance(layers, list) or not all(isinstance(layer, dict) for layer in layers):
        return
    calls = {layer.get("name"): max(len(layer.get("inbound_nodes") or []), 1)
             for layer in layers}
    for layer in layers:
        nodes = layer.get("inbound_nodes")
        for ref in (r for node in (nodes if isinstance(nodes, list) else []) if
                    isinstance(node, list) for r in node):
            if not isinstance(ref, list) or len(ref) < 3:
                continue  # not the legacy [layer, node_index, tensor_index, kwargs] form
            name, index, tensor = ref[:3]
            if not isinstance(name, str) or name not in calls or type(index) is not int or \
                    type(tensor) is not int or not 0 <= index < calls[name]:
                raise InputError(f"{where}: layer '{layer.get('name')}' reads {ref[:3]!r}, "
                                 "which no layer call makes; the file is corrupt, re-save the "
                                 "model")


def _config(raw, path: str) -> dict:
    """The parsed model config; InputError unless it is a JSON object."""
    try:
        config = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError alike
        raise InputError(f"{path}: the model config is not JSON ({first_line(err)}); the file "
                         "is corrupt, re-save the model") from err
    if not isinstance(config, dict):
        raise InputError(f"{path}: the model config is not a JSON object; the file is corrupt, "
                         "re-save the model")
    return config
