"""The zoo: architectures users ship, small and seeded, saved the ways users save them
(nothing downloaded). Issue 14's coverage run (bench/zoo_coverage.py) converts each to every
target it lists.

    python models/zoo.py OUT_DIR [--only NAME,NAME] [--list]

writes OUT_DIR/NAME/ with the model and OUT_DIR/NAME/zoo.json:
  path     the model file or folder, relative to OUT_DIR/NAME
  args     extra freeze arguments (--outputs for checkpoints, --custom-objects ...; put
           models/ on PYTHONPATH for the latter)
  targets  the targets this model should convert to
  kind     keras3 | tf_keras | tfmot | tf1 | savedmodel
  peer     what the coverage run needs to run peers: format (keras3, tf_keras, saved_model,
           checkpoint), inputs [{name?, shape, dtype, high?}], outputs (checkpoints), qat,
           custom_objects
  seconds  build time
  reloads  false where the model's own framework cannot load the file back (cqat_cnn)
Each model is loaded back in its own framework after saving (Keras 3, tf_keras, TensorFlow).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.keras is tf_keras (tfmot needs it)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zoo_keras  # noqa: E402
import zoo_text  # noqa: E402
import zoo_tf1  # noqa: E402
import zoo_tfmot  # noqa: E402
import zoo_vision  # noqa: E402

MODULES = (zoo_keras, zoo_text, zoo_tfmot, zoo_tf1, zoo_vision)


def registry(modules=MODULES) -> dict:
    """name -> builder(out_dir) -> zoo.json entry, in build order."""
    found = {}
    for module in modules:
        found.update(module.builders())
    return found


def check(folder: str, entry: dict) -> None:
    """Load the saved model back the way its framework does; raise if it does not load."""
    path = os.path.join(folder, entry["path"])
    fmt = entry["peer"]["format"]
    if fmt == "keras3":
        import keras

        keras.saving.load_model(path)
    elif fmt == "tf_keras":
        import tensorflow_model_optimization as tfmot
        import tf_keras

        custom = {"DenseQuantizeConfig": zoo_tfmot.DenseQuantizeConfig}
        with tfmot.quantization.keras.quantize_scope(custom):
            tf_keras.models.load_model(path)
    elif fmt == "saved_model":
        import tensorflow as tf

        tf.saved_model.load(path)
    else:  # a TF1 checkpoint: its meta graph imports and the Saver restores it
        import tensorflow as tf

        with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
            saver = tf.compat.v1.train.import_meta_graph(path + ".meta")
            saver.restore(sess, path)


def build(name: str, out_root: str, modules=MODULES) -> dict:
    """Build one model into OUT_ROOT/NAME (replacing what was there); return its entry."""
    folder = os.path.join(out_root, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    start = time.perf_counter()
    entry = registry(modules)[name](folder)
    if entry.get("reloads", True):
        check(folder, entry)
    entry["seconds"] = round(time.perf_counter() - start, 2)
    with open(os.path.join(folder, "zoo.json"), "w") as f:
        json.dump(entry, f, indent=1)
    return entry


def _clear() -> None:
    """Free the last model's Keras state (only for the Keras packages already imported)."""
    for module in ("keras", "tf_keras"):
        if module in sys.modules:
            sys.modules[module].backend.clear_session()


def main(argv=None, modules=MODULES, doc: str = __doc__, listed=None) -> int:
    """`listed`: the modules --list names (the coverage run's models); default all."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?")
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--list", action="store_true", help="print the model names and exit")
    args = parser.parse_args(argv)
    names = list(registry(modules))
    if args.list:
        print("\n".join(registry(listed) if listed is not None else names))
        return 0
    if not args.out_dir:
        parser.error("OUT_DIR is required")
    chosen = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)} (see --list)")
    for name in chosen:
        entry = build(name, args.out_dir, modules)
        print(f"{name}: {os.path.join(args.out_dir, name, entry['path'])} "
              f"({entry['seconds']} s)", flush=True)
        _clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
