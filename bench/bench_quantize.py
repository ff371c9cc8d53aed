"""Quantization that meets its own accuracy target (issue 16): graphfreeze's `--quantize-until`
against the int8 paths a user has today, on classifiers trained briefly on the shapes set
(models/shapes.py), measured on its held-out val set.

    python bench/bench_quantize.py [--models tiny,mobilenet_v2,resnet50] [--quick]
                                   [--until 1%,0.001] [--repeat N] [--markdown bench/results_quantize.md]

Per model (built once into bench/.cache/quantize/<kind>/, reused after): a) float TFLite
(TFLiteConverter on the Keras model's `model.export` SavedModel); b) TensorFlow's plain full
int8 (Optimize.DEFAULT, representative data from train.npz, int8 builtins and io); c)
ai-edge-quantizer on the float .tflite, its default recipe (dynamic_wi8_afp32) and its static
int8 recipe calibrated on train.npz, when the package is installed; d) `freeze --target
edge-int8 --calibration train.npz --verify-data val.npz --quantize-until T`, read from the
sidecar, for each target T (default: a 1% top-1 drop, and a mean |diff| of 0.001, tight enough
that these models must keep layers in float); e) what verification costs: `freeze --target
tflite` with --no-verify, the default seeded verification, and --verify-data of 500 val images,
each timed in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache" / "quantize"
FREEZE = str(Path(sys.executable).with_name("freeze"))
# kind -> models/shapes.py arguments (full: its defaults, --quick); val stays >= 500 images
BUILD = {"tiny": ([], []), "mobilenet_v2": ([], ["--train", "1000", "--epochs", "6"]),
         "resnet50": ([], ["--train", "1000", "--epochs", "4"])}
VAL = 500


def build(kind: str, quick: bool) -> Path:
    """The trained model's folder (model.keras, train.npz, val.npz, shapes.json), built once."""
    folder = CACHE / (kind + ("-quick" if quick else ""))
    if not (folder / "shapes.json").exists():
        args = [sys.executable, str(ROOT / "models" / "shapes.py"), str(folder), "--kind", kind,
                "--val", str(VAL), *BUILD[kind][quick]]
        print(f"[{kind}] training: {' '.join(args[2:])}", file=sys.stderr, flush=True)
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return folder


def load(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path) as data:
        return data["image"], data["labels"]


def top1(model: bytes, x: np.ndarray, labels: np.ndarray, batch: int = 50) -> float:
    """Top-1 of a .tflite model on (x, labels), int8 io (de)quantized by its own parameters."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=model, num_threads=2)
    source, sink = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    interpreter.resize_tensor_input(source["index"], [batch, *x.shape[1:]])
    interpreter.allocate_tensors()
    scale, zero = source["quantization"]
    found = []
    for start in range(0, len(x), batch):
        chunk = x[start:start + batch]
        chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - len(chunk), 0)])
        if scale:
            chunk = np.clip(np.round(chunk / scale + zero), -128, 127)
        interpreter.set_tensor(source["index"], chunk.astype(source["dtype"]))
        interpreter.invoke()
        found.append(interpreter.get_tensor(sink["index"]).argmax(-1))
    return float(np.mean(np.concatenate(found)[:len(x)] == labels))


def tf_tflite(folder: Path, int8: bool) -> tuple[bytes, float]:
    """TensorFlow's own conversion of the model (float, or plain full int8), and its seconds."""
    import tensorflow as tf

    exported = folder / "export"
    if not exported.exists():
        import keras

        keras.models.load_model(folder / "model.keras").export(str(exported), verbose=False)
    start = time.monotonic()
    conv = tf.lite.TFLiteConverter.from_saved_model(str(exported))
    if int8:
        calibration, _ = load(folder / "train.npz")
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([row[None]] for row in calibration)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
    model = conv.convert()
    return model, time.monotonic() - start


def edge_quantizer(float_model: bytes, folder: Path, static: bool) -> tuple[bytes, float]:
    """ai-edge-quantizer on the float .tflite: dynamic_wi8_afp32 (its default) or static_wi8_ai8."""
    from ai_edge_litert.interpreter import Interpreter
    from ai_edge_quantizer import quantizer, recipe

    start = time.monotonic()
    qt = quantizer.Quantizer(float_model, recipe.static_wi8_ai8() if static else recipe.dynamic_wi8_afp32())
    calibration = None
    if static:
        signatures = Interpreter(model_content=float_model).get_signature_list()
        key, spec = next(iter(signatures.items()))
        rows, _ = load(folder / "train.npz")
        calibration = qt.calibrate({key: [{spec["inputs"][0]: row[None]} for row in rows]})
    model = bytes(qt.quantize(calibration, enable_progress_report=False).quantized_model)
    return model, time.monotonic() - start


def freeze(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    done = subprocess.run([FREEZE, *args], capture_output=True, text=True)
    return done, time.monotonic() - start


def unavailable(done: subprocess.CompletedProcess) -> str | None:
    """Why a freeze run gave no result ("not available" for an option the CLI lacks), or None."""
    if done.returncode == 2 and "No such option" in done.stderr:
        option = done.stderr.strip().splitlines()[-1]
        return f"not available ({option.removeprefix('Error: ').strip()})"
    if done.returncode:
        return f"failed (exit {done.returncode}): {(done.stderr.strip().splitlines() or ['?'])[-1][:160]}"
    return None


def graphfreeze_until(folder: Path, until: str) -> dict:
    """`freeze --target edge-int8 ... --quantize-until` and its sidecar's verification record."""
    out = folder / f"until-{until.replace('%', 'pct')}.tflite"
    done, seconds = freeze(str(folder / "model.keras"), "--target", "edge-int8", "--calibration",
                           str(folder / "train.npz"), "--verify-data", str(folder / "val.npz"),
                           "--quantize-until", until, "-o", str(out), "--force")
    # exit 5: the target was not met; the sidecar still says how far it got
    error = unavailable(done) if done.returncode != 5 else None
    if error or not Path(str(out) + ".json").exists():
        return {"target": until, "error": error or "no sidecar written", "seconds": seconds}
    verification = json.loads(Path(str(out) + ".json").read_text()).get("verification", {})
    return {"target": until, "seconds": seconds, "exit": done.returncode,
            "accuracy": verification.get("accuracy"), "until": verification.get("quantize_until"),
            "bytes": out.stat().st_size if out.exists() else None}


def verify_cost(folder: Path, repeat: int) -> dict:
    """Median wall seconds of `freeze --target tflite` without, with seeded, with --verify-data."""
    x, labels = load(folder / "val.npz")
    data = folder / "val_500.npz"
    if not data.exists():
        np.savez(data, image=x[:500], labels=labels[:500])
    out = str(folder / "cost.tflite")
    base = [str(folder / "model.keras"), "--target", "tflite", "-o", out, "--force"]
    runs = {"no-verify": ["--no-verify"], "seeded (default)": [],
            "--verify-data 500": ["--verify-data", str(data)]}
    found = {}
    for name, extra in runs.items():
        times, error = [], None
        for _ in range(repeat):
            done, seconds = freeze(*base, *extra)
            error = unavailable(done)
            if error:
                break
            times.append(seconds)
        found[name] = {"error": error} if error else {"seconds": statistics.median(times)}
    return found


def measure(kind: str, args) -> dict:
    folder = build(kind, args.quick)
    info = json.loads((folder / "shapes.json").read_text())
    x, labels = load(folder / "val.npz")
    result = {"kind": kind, "info": info, "rows": []}
    float_model, seconds = tf_tflite(folder, int8=False)
    float_top1 = top1(float_model, x, labels)
    result["float"] = {"bytes": len(float_model), "top1": float_top1}

    def row(approach, kept, model_or_error, seconds=None):
        if isinstance(model_or_error, str):
            result["rows"].append({"approach": approach, "error": model_or_error})
            return
        accuracy = top1(model_or_error, x, labels)
        result["rows"].append({"approach": approach, "kept": kept, "bytes": len(model_or_error),
                               "top1": accuracy, "drop": float_top1 - accuracy,
                               "seconds": seconds})

    row("a) float TFLite (TFLiteConverter)", "all", float_model, seconds)
    print(f"[{kind}] float tflite: {float_top1:.3f}", file=sys.stderr, flush=True)
    row("b) TFLiteConverter full int8", "0", *tf_tflite(folder, int8=True))
    try:
        import ai_edge_quantizer  # noqa: F401
    except ImportError as err:
        row("c) ai-edge-quantizer", "", f"did not run: {err}")
    else:
        for static, name in ((False, "dynamic_wi8_afp32 (default)"), (True, "static_wi8_ai8")):
            try:
                model, seconds = edge_quantizer(float_model, folder, static)
            except Exception as err:  # noqa: BLE001 -- reported as the peer's failure
                row(f"c) ai-edge-quantizer {name}", "", f"failed: {type(err).__name__}: {err}"[:200])
            else:
                kept = "0" if static else "0 (activations float)"
                row(f"c) ai-edge-quantizer {name}", kept, model, seconds)
    print(f"[{kind}] peers done", file=sys.stderr, flush=True)
    result["until"] = [graphfreeze_until(folder, until) for until in args.until.split(",")]
    result["cost"] = verify_cost(folder, args.repeat)
    return result


def pct(value) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def until_rows(until: dict, float_bytes: int) -> list[str]:
    """One graphfreeze --quantize-until run's steps, as trade-off table rows."""
    if "error" in until:
        return [f"| d) freeze --quantize-until {until['target']} | {until['error']} | | | | | | |"]
    record = until.get("until") or {}
    total = record.get("layers")

    def kept(count):
        return (f"{count} of {total}", f"{100 * count / total:.0f}%") if total else (str(count), "")

    rows = []
    for step in record.get("steps", []):
        mark = {True: "passed", False: "missed"}.get(step.get("passed"), "?")
        if step.get("mean_abs_diff") is not None:
            mark += f", mean abs diff {step['mean_abs_diff']:.4f}"
        if step.get("ranges"):
            mark += f", {step['ranges']} ranges"
        rows.append(f"| d) {until['target']}: step ({mark}) | {' | '.join(kept(step['kept']))} | "
                    f"{step['bytes'] / 1024:.0f} | {step['bytes'] / float_bytes:.2f} | "
                    f"{pct(step['top1'])} | {pct(step['drop'])} | |")
    accuracy, size = until.get("accuracy") or {}, until.get("bytes") or 0
    count, share = kept(len(record.get("kept_float", [])))
    if not record:
        count = "0 (sidecar: no verification.quantize_until)"
    rows.append(f"| **d) freeze --quantize-until {until['target']} (exit {until['exit']})** | "
                f"{count} | {share} | {size / 1024:.0f} | {size / float_bytes:.2f} | "
                f"{pct(accuracy.get('artifact'))} | {pct(accuracy.get('drop'))} | {until['seconds']:.1f} |")
    return rows


def report(results: list[dict], args) -> str:
    lines = ["Top-1 on the held-out val set; drop in points against the float TFLite model (freeze's "
             "rows: against the original Keras model, as its sidecar reports). s: the conversion alone, "
             "in-process, for TensorFlow and ai-edge-quantizer; the whole `freeze` process (TensorFlow "
             "import, every conversion round, verification) for freeze.", ""]
    for result in results:
        info = result["info"]
        lines += [f"### {result['kind']}: {info['size']}x{info['size']}, {info['params']:,} parameters, "
                  f"trained on {info['train']} images for {info['epochs']} epochs "
                  f"({info['train_seconds']} s), Keras top-1 {pct(info['val_top1'])} on {info['val']}",
                  "", "| approach | layers kept float | % of layers | KB | size vs float | top-1 | drop "
                  "| s |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in result["rows"]:
            if "error" in row:
                lines.append(f"| {row['approach']} | {row['error']} | | | | | | |")
                continue
            share = {"all": "100%", "0": "0%"}.get(row["kept"], "")
            lines.append(f"| {row['approach']} | {row['kept']} | {share} | "
                         f"{row['bytes'] / 1024:.0f} | {row['bytes'] / result['float']['bytes']:.2f} | "
                         f"{pct(row['top1'])} | {pct(row['drop'])} | {row['seconds']:.1f} |")
        for until in result["until"]:
            lines += until_rows(until, result["float"]["bytes"])
        cost = result["cost"]
        base = cost["no-verify"].get("seconds")
        lines += ["", f"`freeze --target tflite` wall time, median of {args.repeat} (a fresh process each):",
                  "", "| run | s | vs --no-verify | verification's own s / conversion s |",
                  "|---|---|---|---|"]
        for name, run in cost.items():
            if "error" in run or not base:
                lines.append(f"| {name} | {run.get('error', run.get('seconds'))} | | |")
                continue
            extra = run["seconds"] - base
            share = "" if name == "no-verify" else f"{extra:.2f} s / {base:.2f} s = {extra / base:.2f}"
            lines.append(f"| {name} | {run['seconds']:.2f} | {run['seconds'] / base:.2f}x | {share} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="tiny,mobilenet_v2,resnet50")
    parser.add_argument("--quick", action="store_true", help="smaller training, one timing run")
    parser.add_argument("--until", default="1%,0.001",
                        help="--quantize-until's targets, comma-separated (default 1%%,0.001)")
    parser.add_argument("--repeat", type=int, help="timing runs per command (default 3, --quick 1)")
    parser.add_argument("--markdown", help="also write the tables to this file")
    args = parser.parse_args()
    args.repeat = args.repeat or (1 if args.quick else 3)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    results = [measure(kind, args) for kind in args.models.split(",")]
    text = report(results, args)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(f"# bench_quantize.py {' '.join(sys.argv[1:])}\n\n{text}\n")


if __name__ == "__main__":
    main()
