"""Second zoo: Keras families (issue 24): keras-hub backbones and causal LMs built from their
constructors with tiny configs and random weights (no preset, nothing downloaded), saved as
users save them (`model.save("model.keras")`, `model.export(dir)`), and a Keras 3 model whose
custom layer and activation are registered under a package prefix (`kecam>Scale`), as
keras-cv-attention-models registers its own (`prefixed_layers`; put models/ on
PYTHONPATH for --custom-objects)."""

from __future__ import annotations

import os

SEQ = 16
VOCAB = 100
TARGETS = ["android", "server", "tflite", "tflite-fp16", "tflite-dynamic", "edge-int8", "onnx",
           "openvino"]


def _hub():
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    return keras_hub


def _bert():
    return _hub().models.BertBackbone(vocabulary_size=VOCAB, num_layers=1, num_heads=2,
                                      hidden_dim=16, intermediate_dim=32,
                                      max_sequence_length=SEQ)


def _gpt2():
    hub = _hub()
    backbone = hub.models.GPT2Backbone(vocabulary_size=VOCAB, num_layers=1, num_heads=2,
                                       hidden_dim=16, intermediate_dim=32,
                                       max_sequence_length=SEQ)
    return hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)


def _gemma():
    hub = _hub()
    backbone = hub.models.GemmaBackbone(vocabulary_size=VOCAB, num_layers=1, num_query_heads=2,
                                        num_key_value_heads=1, hidden_dim=16,
                                        intermediate_dim=32, head_dim=8)
    return hub.models.GemmaCausalLM(backbone=backbone, preprocessor=None)


# name -> (constructor, its inputs: name -> exclusive high of its values, extra freeze args)
# Gemma's RMSNorm reciprocals lose too much in int8 (TFLiteConverter's own int8 model differs
# by 0.25 on average): edge-int8 keeps the worst layers float until it verifies
HUB = {"bert": (_bert, {"padding_mask": 2, "segment_ids": 2, "token_ids": VOCAB}, ()),
       "gpt2_lm": (_gpt2, {"padding_mask": 2, "token_ids": VOCAB}, ()),
       "gemma_lm": (_gemma, {"padding_mask": 2, "token_ids": VOCAB},
                    ("--quantize-until", "0.05"))}


def _entry(path: str, inputs: dict, fmt: str, args=()) -> dict:
    shapes = ",".join(f"{name}[1,{SEQ}]" for name in inputs)
    return {"path": path, "args": ["--inputs", shapes, *args], "targets": list(TARGETS),
            "kind": "savedmodel" if fmt == "saved_model" else "keras3",
            "peer": {"format": fmt, "inputs": [{"name": n, "shape": [1, SEQ], "dtype": "int32",
                                                "high": high} for n, high in inputs.items()]}}


def hub_keras(name: str, out: str) -> dict:
    """`model.save("model.keras")` of a keras-hub model."""
    build, inputs, args = HUB[name]
    build().save(os.path.join(out, "model.keras"))
    return _entry("model.keras", inputs, "keras3", args)


def hub_export(name: str, out: str) -> dict:
    """`model.export(dir)` (Keras' tf_saved_model) of a keras-hub model."""
    build, inputs, args = HUB[name]
    build().export(os.path.join(out, "saved_model"), verbose=False)
    return _entry("saved_model", inputs, "saved_model", args)


def prefixed_custom(out: str) -> dict:
    """A Keras 3 CNN with a custom activation and layer registered as `kecam>hard_swish` and
    `kecam>Scale` (the package prefix keras-cv-attention-models uses)."""
    import keras
    from prefixed_layers import Scale, hard_swish

    keras.utils.set_random_seed(0)
    image = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(4, 3, activation=hard_swish, name="stem")(image)
    x = Scale(name="scale")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    keras.Model(image, keras.layers.Dense(3, name="logits")(x)).save(
        os.path.join(out, "model.keras"))
    return {"path": "model.keras",
            "args": ["--custom-objects", "prefixed_layers:hard_swish",
                     "--custom-objects", "prefixed_layers:Scale"],
            "targets": TARGETS[:-1], "kind": "keras3",
            "peer": {"format": "keras3", "inputs": [{"shape": [1, 16, 16, 3],
                                                     "dtype": "float32"}],
                     "custom_objects": ["prefixed_layers:hard_swish",
                                        "prefixed_layers:Scale"]}}


def qat_partly_dense(out: str) -> dict:
    """tfmot QAT annotated on the Dense head only (the convolutions stay float), as a tf_keras
    `.keras` file: the edge-int8 peer (TFLiteConverter) keeps the unannotated layers float."""
    import zoo_tfmot

    qk = zoo_tfmot._tfmot().quantization.keras  # noqa: SLF001 -- the zoo's own helpers

    def annotate(layer):
        return qk.quantize_annotate_layer(layer) if layer.name == "probs" else layer

    annotated = zoo_tfmot._keras().models.clone_model(zoo_tfmot._cnn(),  # noqa: SLF001
                                                       clone_function=annotate)
    zoo_tfmot._save(zoo_tfmot._train(qk.quantize_apply(annotated)), out, "model.h5")  # noqa: SLF001
    return zoo_tfmot._entry("model.h5", qat=True)  # noqa: SLF001


def builders() -> dict:
    found = {}
    for name in HUB:
        found[f"hub_{name}_keras"] = lambda out, n=name: hub_keras(n, out)
        found[f"hub_{name}_export"] = lambda out, n=name: hub_export(n, out)
    found["prefixed_custom"] = prefixed_custom
    found["qat_partly_dense"] = qat_partly_dense
    return found
