"""A Keras model's config, read from the file without loading the model, and checked before
any layer is built: no `Lambda` (marshalled Python), and no `TFOpLambda` calling a TensorFlow
function that touches the host.
"""

from __future__ import annotations

import json

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.checks.safety import REFUSE, host_ops

# Keras: TFOpLambda layers name the TF API function they call (`io.write_file`, `nn.relu`,
# `__operators__.add`, `compat.v1.transpose`). The function is judged by the raw ops it builds:
# the API name is resolved on `tf`, and the raw ops its code reaches (calls into TensorFlow's
# generated `gen_*_ops` wrappers, followed through tensorflow.python.ops) must contain no host
# op (host_ops.json) and no logging op (print, summaries). A name that does not resolve to a
# function of tensorflow.python.ops is refused.
_NAMESPACE_USE = {"io": "reads or writes files", "py_function": "runs Python code",
                  "numpy_function": "runs Python code", "py_func": "runs Python code",
                  "print": "prints", "summary": "writes summary files", "data": "reads files",
                  "saved_model": "reads or writes files"}
_OPS_PACKAGE = "tensorflow.python.ops."
# generated-op families whose every op reaches beyond a tensor computation: data pipelines
# (a dataset can be built from a serialized graph), readers, summaries, Python, and calls of a
# function the op is given
_FAMILY_USE = {"gen_dataset_ops": "builds a data pipeline (may read files or run a graph)",
               "gen_experimental_dataset_ops": "builds a data pipeline (may read files or run "
                                               "a graph)",
               "gen_io_ops": "reads or writes files", "gen_summary_ops": "writes summary files",
               "gen_script_ops": "runs Python code",
               "gen_functional_ops": "runs a function it is given"}


def _codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, type(code)):
            yield from _codes(const)


def _raw_ops(fn, seen: set) -> set[tuple[str, str]]:
    """The raw ops ((gen module, op name)) `fn`'s code reaches through tensorflow.python.ops."""
    import inspect
    import sys
    import types

    from tensorflow.python.util import tf_decorator

    fn = tf_decorator.unwrap(inspect.unwrap(fn))[1]
    if not isinstance(fn, types.FunctionType) or fn in seen or \
            not (fn.__module__ or "").startswith(_OPS_PACKAGE):
        return set()
    seen.add(fn)
    family = fn.__module__.rpartition(".")[2]
    if family.startswith("gen_"):  # a raw op's Python wrapper: (family, op) ("" if unnamed)
        ops = {n.lower(): n for n in dir(sys.modules[fn.__module__]) if n[:1].isupper()}
        return {(family, ops.get(fn.__name__.replace("_", "").lower(), ""))}
    found: set[tuple[str, str]] = set()
    for code in _codes(fn.__code__):
        for name in code.co_names:
            value = fn.__globals__.get(name)
            if isinstance(value, types.ModuleType) and value.__name__.startswith(_OPS_PACKAGE):
                # module.attr: attr is in co_names too
                for attr in code.co_names:
                    member = getattr(value, attr, None)
                    if callable(member):
                        found |= _raw_ops(member, seen)
            elif callable(value):
                found |= _raw_ops(value, seen)
    return found


def _logging_ops() -> set[str]:
    """Ops that print or write summaries (gen_logging_ops: Print, PrintV2, *Summary, ...)."""
    from tensorflow.python.ops import gen_logging_ops

    return {name for name in dir(gen_logging_ops) if name[:1].isupper()} - {"Assert"}


def keras_function_use(function: str) -> str | None:
    """What a TFOpLambda's `function` does to the host, or None if the raw ops it builds are
    pure (no host op, no logging op)."""
    import tensorflow as tf

    head, _, leaf = function.rpartition(".")
    camel = "".join(p.capitalize() for p in leaf.split("_"))
    refused = host_ops().get(camel) or _NAMESPACE_USE.get(head.split(".")[0] or leaf)
    target = tf
    for part in function.split(".") if function else ["?"]:
        target = getattr(target, part, None)
    if not refused and callable(target) and \
            (getattr(target, "__module__", "") or "").startswith(_OPS_PACKAGE):
        found = _raw_ops(target, set())
        ops = {op for _, op in found}
        hosts = sorted(op for op in ops if op in host_ops())
        if hosts:
            return f"{host_ops()[hosts[0]]} (op {hosts[0]})"
        if ops & _logging_ops():
            return "prints or writes summaries"
        why = next((_FAMILY_USE[f] for f, _ in sorted(found) if f in _FAMILY_USE), None) or \
            next((f"builds op {op}, which runs a function or graph it is given" for op in sorted(ops)
                  if _takes_function(op)), None)
        if why or "" in ops:
            return why or "builds an op graphfreeze cannot name"
        if ops:
            return None
    return refused or "is not a pure TensorFlow math function"


def _takes_function(op: str) -> bool:
    """Whether op `op` has a function-valued attr (it runs a function or graph it is given)."""
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(op)
    return op_def is None or any(a.type in ("func", "list(func)") for a in op_def.attr)


def objects(config):
    """Every serialized object ({"class_name": ...}) in a Keras config, depth first."""
    if isinstance(config, dict):
        if "class_name" in config:
            yield config
        for value in config.values():
            yield from objects(value)
    elif isinstance(config, list):
        for value in config:
            yield from objects(value)


def check_keras_config(config: dict, where: str) -> None:
    """Refuse Lambda layers (Python code) and TFOpLambda layers calling non-math TF functions."""
    for layer in objects(config):
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
    import os

    if os.path.isdir(path):
        raise InputError(f"{path}: a directory, not a Keras model file; give the .keras or .h5 "
                         "file model.save wrote")
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
    for obj in objects(config):  # Keras writes every name as a string
        name = obj["config"].get("name") if isinstance(obj.get("config"), dict) else None
        if name is not None and not isinstance(name, str):
            raise InputError(f"{path}: a {obj['class_name']} in the model config is named "
                             f"{name!r}, not a string; the file is corrupt, re-save the model")
    return config
