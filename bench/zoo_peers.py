"""One peer conversion of one zoo model, run by zoo_coverage.py in its own process:

    python bench/zoo_peers.py ZOO/NAME OUT_DIR TARGET[,TARGET...]

TFLiteConverter (from_keras_model, from_saved_model, or from_session on a restored checkpoint)
for the tflite targets; tf2onnx's Python API for onnx (Keras 3's model.export for Keras 3
files); openvino.convert_model for openvino (the SavedModel folder or frozen graph as OpenVINO's
frontend reads it, openvino-tokenizers imported; Keras 3's model.export for Keras 3 files);
Keras 3's model.export for server on Keras 3 files; TensorFlow's freeze_graph for android on
TF1 checkpoints. The peer works if its artifact runs on a sample input (LiteRT interpreter,
onnxruntime, OpenVINO, a TF session).
Prints one line per target: PEER {"target", "status": ok|failed|none, "seconds" (conversion
only), "bytes", "error"}."""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))

TFLITE = ("tflite", "tflite-fp16", "tflite-dynamic", "edge-int8")


def samples(peer: dict, count: int = 1) -> list[list]:
    import numpy as np

    rng = np.random.default_rng(0)
    batches = []
    for _ in range(count):
        batch = []
        for spec in peer["inputs"]:
            if spec["dtype"] == "string":
                words = [b"red", b"green", b"blue", b"the cat", b"a dog", b""]
                batch.append(np.array(rng.choice(words, spec["shape"]), dtype=object))
            elif spec["dtype"].startswith("int"):
                batch.append(rng.integers(1, spec.get("high", 10), spec["shape"]).astype(
                    spec["dtype"]))
            else:
                batch.append(rng.random(spec["shape"], dtype=np.float32))
        batches.append(batch)
    return batches


def _keras_model(path: str, peer: dict):
    if peer["format"] in ("keras3", "keras_hub"):
        import keras

        if peer["format"] == "keras_hub":
            import keras_hub  # noqa: F401 - registers its classes

        return keras.saving.load_model(path)
    import tensorflow_model_optimization as tfmot
    import tf_keras
    import zoo_tfmot

    with tfmot.quantization.keras.quantize_scope(
            {"DenseQuantizeConfig": zoo_tfmot.DenseQuantizeConfig}):
        return tf_keras.models.load_model(path)


def _tflite_converter(path: str, peer: dict):
    import tensorflow as tf

    fmt = peer["format"]
    if fmt == "saved_model":
        return tf.lite.TFLiteConverter.from_saved_model(path), None
    if fmt != "checkpoint":
        return tf.lite.TFLiteConverter.from_keras_model(_keras_model(path, peer)), None
    graph = tf.Graph()
    sess = tf.compat.v1.Session(graph=graph)
    with graph.as_default():
        tf.compat.v1.train.import_meta_graph(path + ".meta").restore(sess, path)
    inputs = [graph.get_tensor_by_name(s["name"] + ":0") for s in peer["inputs"]]
    outputs = [graph.get_tensor_by_name(n + ":0") for n in peer["outputs"]]
    return tf.compat.v1.lite.TFLiteConverter.from_session(sess, inputs, outputs), sess


def tflite(path: str, peer: dict, target: str, out: str) -> None:
    import tensorflow as tf

    converter, _sess = _tflite_converter(path, peer)
    converter.allow_custom_ops = bool(peer.get("op_library"))  # TF-Text's TFLite custom ops
    if target != "tflite":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if target == "tflite-fp16":
        converter.target_spec.supported_types = [tf.float16]
    if target == "edge-int8" and not peer.get("qat"):
        converter.representative_dataset = lambda: iter(samples(peer, 8))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    with open(out, "wb") as f:
        f.write(converter.convert())


def run_tflite(out: str, peer: dict, batch: list) -> list:
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, InterpreterWithCustomOps

    if peer.get("op_library") == "tensorflow_text":
        from tensorflow_text import tflite_registrar

        interpreter = InterpreterWithCustomOps(
            model_path=out, custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
    else:
        interpreter = Interpreter(model_path=out)
    details = interpreter.get_input_details()
    for detail, value in zip(details, batch, strict=True):
        if list(detail["shape"]) != list(value.shape):
            interpreter.resize_tensor_input(detail["index"], value.shape)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), batch, strict=True):
        scale, zero = detail["quantization"]
        if detail["dtype"] in (np.int8, np.uint8) and scale:
            value = np.round(value / scale + zero).astype(detail["dtype"])
        interpreter.set_tensor(detail["index"], value.astype(detail["dtype"]))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def onnx(path: str, peer: dict, out: str) -> None:
    import tensorflow as tf
    import tf2onnx

    fmt = peer["format"]
    if fmt in ("keras3", "keras_hub"):
        _keras_model(path, peer).export(out, format="onnx")
        return
    if fmt == "tf_keras":
        model = _keras_model(path, peer)
        signature = [tf.TensorSpec(s["shape"], s["dtype"]) for s in peer["inputs"]]
        tf2onnx.convert.from_keras(model, input_signature=signature, output_path=out)
        return
    if fmt == "saved_model":
        graph_def, inputs, outputs = tf2onnx.tf_loader.from_saved_model(path, None, None)[:3]
    else:
        inputs = [s["name"] + ":0" for s in peer["inputs"]]
        outputs = [n + ":0" for n in peer["outputs"]]
        graph_def, inputs, outputs = tf2onnx.tf_loader.from_checkpoint(path + ".meta", inputs,
                                                                       outputs)
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
    tf2onnx.convert.from_graph_def(graph_def, input_names=inputs, output_names=outputs,
                                   output_path=out)


def run_onnx(out: str, peer: dict, batch: list) -> list:
    import onnxruntime

    session = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip((i.name for i in session.get_inputs()), batch, strict=True)))


def _openvino():
    """openvino, with openvino-tokenizers' string-op rules and kernels when installed (how
    OpenVINO's docs convert text models)."""
    import openvino as ov

    try:
        import openvino_tokenizers  # noqa: F401
    except ImportError:
        pass
    return ov


def openvino(path: str, peer: dict, out: str) -> None:
    ov = _openvino()

    fmt = peer["format"]
    if fmt in ("keras3", "keras_hub"):
        _keras_model(path, peer).export(out, format="openvino")
        return
    if fmt == "checkpoint":  # OpenVINO's frontend reads the meta graph and its checkpoint
        model = ov.convert_model(path + ".meta", output=[n + ":0" for n in peer["outputs"]])
    else:
        model = ov.convert_model(path if fmt == "saved_model" else _keras_model(path, peer))
    ov.save_model(model, out)


def run_openvino(out: str, peer: dict, batch: list) -> list:
    import numpy as np

    batch = [v.astype(np.bytes_) if v.dtype == object else v for v in batch]  # strings
    return list(_openvino().Core().compile_model(out, "CPU")(batch).values())


def keras_export(path: str, peer: dict, out: str) -> None:
    _keras_model(path, peer).export(out)


def run_saved_model(out: str, peer: dict, batch: list) -> list:
    import tensorflow as tf

    serve = tf.saved_model.load(out).signatures["serving_default"]
    return [v.numpy() for v in serve(*[tf.constant(v) for v in batch]).values()]


def freeze_graph(path: str, peer: dict, out: str) -> None:
    from tensorflow.python.tools import freeze_graph as tool

    version = 2 if os.path.exists(path + ".index") else 1
    tool.freeze_graph("", "", True, path, ",".join(peer["outputs"]), "", "", out, True, "",
                      input_meta_graph=path + ".meta", checkpoint_version=version)


def run_frozen(out: str, peer: dict, batch: list) -> list:
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef.FromString(open(out, "rb").read())
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            feeds = {s["name"] + ":0": v for s, v in zip(peer["inputs"], batch, strict=True)}
            return sess.run([n + ":0" for n in peer["outputs"]], feeds)


def check_runs(run, out: str, peer: dict) -> None:
    """The peer's artifact runs on two different samples with finite outputs; a model of float
    inputs whose every output is the same for both is a stand-in (a composite's placeholder
    body converted as it is: constant zeros), not a conversion of the model."""
    import numpy as np

    first, second = samples(peer, 2)
    outputs = [run(out, peer, batch) for batch in (first, second)]
    for value in outputs[0]:
        assert np.isfinite(np.asarray(value, dtype=float)).all(), "non-finite outputs"
    floats = peer["inputs"] and all(s["dtype"].startswith("float") for s in peer["inputs"])
    if floats and all(np.array_equal(a, b) for a, b in zip(*outputs, strict=True)):
        raise AssertionError("its outputs do not depend on its inputs: it converted a stand-in")


def convert(folder: str, target: str, out: str) -> dict:
    entry = json.load(open(os.path.join(folder, "zoo.json")))
    path, peer = os.path.join(folder, entry["path"]), entry["peer"]
    if peer.get("op_library"):  # e.g. tensorflow_text: the model's ops, registered by import
        __import__(peer["op_library"])
    start = time.perf_counter()
    if target in TFLITE:
        tflite(path, peer, target, out)
        seconds = time.perf_counter() - start
        check_runs(run_tflite, out, peer)
    elif target == "onnx":
        onnx(path, peer, out)
        seconds = time.perf_counter() - start
        check_runs(run_onnx, out, peer)
    elif target == "openvino":
        out += ".xml"
        openvino(path, peer, out)
        seconds = time.perf_counter() - start
        check_runs(run_openvino, out, peer)
    elif target == "server" and peer["format"] in ("keras3", "keras_hub"):
        keras_export(path, peer, out)
        seconds = time.perf_counter() - start
        check_runs(run_saved_model, out, peer)
    elif target == "android" and peer["format"] == "checkpoint":
        freeze_graph(path, peer, out)
        seconds = time.perf_counter() - start
        check_runs(run_frozen, out, peer)
    else:
        return {"status": "none"}
    return {"status": "ok", "seconds": round(seconds, 2), "bytes": _bytes(out)}


def _bytes(path: str) -> int:
    if not os.path.isdir(path):
        return os.path.getsize(path) + (os.path.getsize(path[:-4] + ".bin")
                                        if path.endswith(".xml") else 0)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def error_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


def main(folder: str, out_dir: str, targets: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for target in targets.split(","):
        try:
            result = convert(folder, target, os.path.join(out_dir, "peer." + target))
        except Exception as e:  # noqa: BLE001 - the peer's failure is the result
            result = {"status": "failed", "error": error_line(e)}
        print("PEER " + json.dumps({"target": target, **result}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
    sys.stdout.flush()
    os._exit(0)
