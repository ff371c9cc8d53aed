"""tensorflow-model-optimization models as tfmot itself reloads them.

tfmot's quantize scope names its quantizers and configs, but a cluster-preserving QAT model
(CQAT/PCQAT) saves its quantizers as the plain default ones, so the rebuilt layer lacks the
training-only variables the file holds (cluster centroids, original weights, pulling indices,
sparsity mask) and tf_keras refuses the file ("Weight count mismatch"). At inference those
variables are unused (the quantizer fake-quantizes the layer's own kernel, which CQAT training
kept clustered), so the model is rebuilt from its (already checked) config and every layer
takes its saved weights without them.
"""

from __future__ import annotations

import contextlib

from graphfreeze.errors import InputError

CLUSTER_TRAINING_WEIGHTS = frozenset({"cluster_centroids_tf", "ori_weights_vars_tf",
                                      "pulling_indices_tf", "sparsity_mask"})


def tfmot_scopes():
    """tfmot's own custom-object scopes (pruning, clustering, quantization), if it is installed."""
    stack = contextlib.ExitStack()
    try:
        import tensorflow_model_optimization as tfmot
    except ImportError:
        return stack
    stack.enter_context(tfmot.sparsity.keras.prune_scope())
    stack.enter_context(tfmot.clustering.keras.cluster_scope())
    stack.enter_context(tfmot.quantization.keras.quantize_scope())
    return stack


def _short(name: str) -> str:
    return name.split("/")[-1].split(":")[0]


def has_cluster_training_weights(local: str) -> bool:
    """Whether an `.h5` file holds CQAT's training-only variables."""
    import h5py

    with h5py.File(local, "r") as f:
        group = f.get("model_weights")
        if group is None:
            return False
        return any(_short(n.decode() if isinstance(n, bytes) else n) in CLUSTER_TRAINING_WEIGHTS
                   for layer in group.values() for n in layer.attrs.get("weight_names", []))


def load_cluster_preserved(local: str, config_json: str, objects: dict, where: str):
    """The model of a CQAT `.h5` (config checked by the caller), its weights loaded without the
    clustering training variables; InputError if what is left does not fit the layers."""
    import h5py
    import numpy as np
    import tf_keras
    from tf_keras.src.saving.legacy.hdf5_format import _legacy_weights

    with tfmot_scopes(), tf_keras.utils.custom_object_scope(objects):
        model = tf_keras.models.model_from_json(config_json)
    values = []
    with h5py.File(local, "r") as f:
        group = f["model_weights"]
        for layer in model.layers:
            weights = _legacy_weights(layer)
            saved = group[layer.name] if layer.name in group else None
            names = [n.decode() if isinstance(n, bytes) else n
                     for n in (saved.attrs.get("weight_names", []) if saved is not None else [])]
            kept = [n for n in names if _short(n) not in CLUSTER_TRAINING_WEIGHTS]
            if len(kept) != len(weights):
                raise InputError(f"{where}: layer '{layer.name}' has {len(weights)} weights but "
                                 f"the file holds {len(kept)} for it; re-save the model")
            for var, name in zip(weights, kept, strict=True):
                value = np.asarray(saved[name])
                if tuple(value.shape) != tuple(var.shape):
                    raise InputError(f"{where}: weight '{name}' of layer '{layer.name}' is "
                                     f"{list(value.shape)} in the file, the layer wants "
                                     f"{var.shape.as_list()}; re-save the model")
                values.append((var, value))
    tf_keras.backend.batch_set_value(values)
    return model
