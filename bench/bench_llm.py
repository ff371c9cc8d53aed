"""Issue 47: language models on the device. Per model and weight type (float32, fp16, int8,
int4 in blocks of 32): the litert-lm artifact's size, its prefill latency for 128 tokens and its
decode tokens/s at 128 tokens of context in LiteRT's interpreter (the format's own
generation session, as `freeze generate` runs it, 2 threads),
side by side with the original Keras model's cached `generate` (greedy, after a warm-up) and with
Keras' own `model.export(format="litert")` artifact run as a no-cache loop (each new token
recomputes the whole 128-token sequence); and the share of generated tokens that match Keras'.

Models: keras-hub GPT-2 and Llama (and Gemma with --families), vocabulary 8000, 4 layers, hidden
256, 512 positions, built offline from their constructors with seeded random weights (speed and
size do not depend on the weights). Greedy tokens of random weights are near ties, so token
agreement is also measured on models/causal_lms.py's tiny models trained to count, whose greedy
choices are decided as a trained model's are. Every conversion is the `freeze` command, run in
the model's own folder.

    python bench/bench_llm.py [--out DIR] [--families gpt2,llama] [--new-tokens 32] [--reuse]
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

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parent.parent
FREEZE = str(Path(sys.executable).with_name("freeze"))
WEIGHTS = {"litert-lm": "float32", "litert-lm-fp16": "fp16", "litert-lm-int8": "int8",
           "litert-lm-int4": "int4"}
VOCAB, LAYERS, HIDDEN, POSITIONS, CONTEXT = 8000, 4, 256, 512, 128
TINY = ("--prefill-lengths", "16", "--max-cache-len", "64", "--max-new-tokens", "32")


def build(family: str, path: Path) -> None:
    """A causal LM of `family`, seeded random weights, saved as `path`."""
    import keras
    import keras_hub as hub

    keras.utils.set_random_seed(0)
    common = {"vocabulary_size": VOCAB, "num_layers": LAYERS, "hidden_dim": HIDDEN}
    model = {
        "gpt2": lambda: hub.models.GPT2CausalLM(hub.models.GPT2Backbone(
            num_heads=4, intermediate_dim=4 * HIDDEN, max_sequence_length=POSITIONS, **common),
            preprocessor=None),
        "llama": lambda: hub.models.LlamaCausalLM(hub.models.LlamaBackbone(
            num_query_heads=4, num_key_value_heads=2, intermediate_dim=3 * HIDDEN, **common),
            preprocessor=None),
        "gemma": lambda: hub.models.GemmaCausalLM(hub.models.GemmaBackbone(
            num_query_heads=4, num_key_value_heads=1, head_dim=HIDDEN // 4,
            intermediate_dim=4 * HIDDEN, **common), preprocessor=None),
    }[family]()
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(path)


def freeze(folder: Path, *args: str) -> float:
    """`freeze ARGS` in `folder`; its wall time."""
    start = time.perf_counter()
    done = subprocess.run([FREEZE, *args], cwd=folder, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode:
        sys.exit(f"freeze {' '.join(args)} in {folder}: exit {done.returncode}\n"
                 f"{done.stderr[-3000:]}")
    return time.perf_counter() - start


def sidecar(folder: Path, target: str) -> dict:
    return json.loads((folder / f"model.{target}.tflite.json").read_text())


def prompt(length: int) -> list[int]:
    import numpy as np

    return np.random.default_rng(1).integers(0, VOCAB, size=length).tolist()


def ours(path: Path, new_tokens: int, runs: int) -> dict:
    """Prefill seconds (128 tokens) and decode tokens/s after it: medians of `runs` after a
    warm-up run, in LiteRT's interpreter on 2 threads."""
    from graphfreeze.formats.litert_lm.runtime import open_litert_lm

    session, ids = open_litert_lm(str(path), threads=2), prompt(CONTEXT)
    made = [session.generate(ids, new_tokens) for _ in range(runs + 1)][1:]
    return {"prefill_s": statistics.median(m.prefill_seconds for m in made),
            "decode_tps": statistics.median(m.tokens_per_second() for m in made),
            "tokens": made[0].tokens}


def keras_cached(model, new_tokens: int, runs: int) -> dict:
    """Keras' own greedy `generate` (its KV cache), on the same 128-token prompt: the time of
    1 new token (its prefill and one step) and of `new_tokens`; decode tokens/s from the
    difference. Each shape is warmed up (traced and compiled) first."""
    import numpy as np

    model.compile(sampler="greedy")
    ids = prompt(CONTEXT)

    def timed(new: int) -> tuple[float, list[int]]:
        tokens = np.zeros([1, CONTEXT + new], np.int32)
        tokens[0, :CONTEXT] = ids
        inputs = {"token_ids": tokens, "padding_mask": (np.arange(CONTEXT + new) < CONTEXT)[None]}
        model.generate(inputs, stop_token_ids=None)  # warm-up: trace and compile this shape
        seconds, out = [], None
        for _ in range(runs):
            start = time.perf_counter()
            out = model.generate(inputs, stop_token_ids=None)
            seconds.append(time.perf_counter() - start)
        return statistics.median(seconds), np.asarray(out["token_ids"])[0, CONTEXT:].tolist()

    one, _ = timed(1)
    many, tokens = timed(new_tokens)
    return {"first_token_s": one, "decode_tps": (new_tokens - 1) / max(many - one, 1e-9),
            "tokens": tokens}


def keras_export(model, folder: Path, runs: int) -> dict:
    """Keras' `model.export(path, format="litert")` (one `serve` signature, no cache), run as
    a no-cache loop: each new token is one forward pass over the whole 128-token context.
    Exported as it comes (any length: does LiteRT's interpreter run it?) and with the input
    signature [1, 128], the loop's fixed window, which is what is timed."""
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    feeds = {"token_ids": np.array([prompt(CONTEXT)], np.int32),
             "padding_mask": np.ones([1, CONTEXT], np.int32)}
    default = folder / "keras_export.tflite"
    model.export(str(default), format="litert", verbose=False)
    try:
        Interpreter(model_path=str(default)).get_signature_runner()(**feeds)
        runs_as_is = "yes"
    except RuntimeError as err:  # e.g. TensorFlow ops kept (Flex), no kernel in LiteRT
        runs_as_is = str(err).split("Node number")[-1].strip()
    fixed = folder / "keras_export_128.tflite"
    spec = {n: tf.TensorSpec([1, CONTEXT], tf.int32, name=n) for n in feeds}
    start = time.perf_counter()
    model.export(str(fixed), format="litert", input_signature=[spec], verbose=False)
    export_s = time.perf_counter() - start
    runner = Interpreter(model_path=str(fixed), num_threads=2).get_signature_runner()
    runner(**feeds)  # warm-up
    seconds = []
    for _ in range(max(runs * 4, 8)):
        start = time.perf_counter()
        runner(**feeds)
        seconds.append(time.perf_counter() - start)
    step = statistics.median(seconds)
    return {"export_s": export_s, "bytes": fixed.stat().st_size, "step_s": step,
            "nocache_tps": 1 / step, "runs_as_is": runs_as_is}


def bench_model(family: str, out: Path, new_tokens: int, runs: int, reuse: bool) -> dict:
    import keras

    folder = out / family
    converted = folder / "converted.json"  # the conversion's time, once it is done
    if reuse and converted.exists():
        convert_s = json.loads(converted.read_text())["seconds"]
    else:
        build(family, folder / "model.keras")
        convert_s = freeze(folder, "model.keras", "--target", ",".join(WEIGHTS),
                           "--prefill-lengths", str(CONTEXT), "--max-cache-len", str(POSITIONS),
                           "--max-new-tokens", str(new_tokens), "--min-token-agreement", "0",
                           "--force")
        converted.write_text(json.dumps({"seconds": convert_s}))
    model = keras.models.load_model(folder / "model.keras")
    row = {"family": family, "params": model.count_params(), "convert_s": convert_s,
           "keras": keras_cached(model, new_tokens, runs),
           "export": keras_export(model, folder, runs), "targets": {}}
    for target, weights in WEIGHTS.items():
        car = sidecar(folder, target)
        measured = ours(folder / f"model.{target}.tflite", new_tokens, runs)
        same = sum(a == b for a, b in zip(measured.pop("tokens"), row["keras"]["tokens"],
                                          strict=True))
        row["targets"][weights] = {"bytes": car["bytes"], **measured,
                                   "agreement_128": same / new_tokens,
                                   "agreement": car["verification"]["token_agreement"],
                                   "logits_diff": car["verification"]["max_abs_diff"]}
    return row


def tiny_agreement(out: Path, families: list[str]) -> dict:
    """family -> weights -> the token agreement `freeze`'s verification reports on
    models/causal_lms.py's trained tiny model (prompts of 4 and 16 tokens, 32 new tokens)."""
    folder = out / "tiny"
    done = subprocess.run([sys.executable, str(ROOT / "models" / "causal_lms.py"), str(folder),
                           *families], capture_output=True, text=True, timeout=1800)
    if done.returncode:
        sys.exit(f"models/causal_lms.py: {done.stderr[-3000:]}")
    found = {}
    for family in families:
        freeze(folder / family, "model.keras", "--target", ",".join(WEIGHTS), *TINY,
               "--min-token-agreement", "0", "--force")
        found[family] = {w: sidecar(folder / family, t)["verification"]
                         for t, w in WEIGHTS.items()}
    return found


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def table(rows: list[dict], tiny: dict) -> str:
    out = ["| model | weights | size | ×float32 | prefill 128 | decode tok/s | ×no-cache "
           "loop | tokens = Keras (random weights) | tokens = Keras (trained tiny) | logits "
           "max \\|diff\\| (tiny) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        base, loop = row["targets"]["float32"]["bytes"], row["export"]["nocache_tps"]
        for weights, t in row["targets"].items():
            check = tiny.get(row["family"], {}).get(weights)
            out.append(
                f"| {row['family']} | {weights} | {mb(t['bytes'])} | {t['bytes'] / base:.2f} | "
                f"{t['prefill_s'] * 1e3:.0f} ms | {t['decode_tps']:.0f} | "
                f"{t['decode_tps'] / loop:.1f}× | {t['agreement']:.0%} | "
                + (f"{check['token_agreement']:.0%} | {check['max_abs_diff']:.2g} |" if check
                   else "- | - |"))
        k, e = row["keras"], row["export"]
        out.append(f"| {row['family']} | Keras `generate` (cached, TF) | - | - | "
                   f"{k['first_token_s'] * 1e3:.0f} ms (1st token) | {k['decode_tps']:.0f} | "
                   f"{k['decode_tps'] / loop:.1f}× | ref | ref | ref |")
        out.append(f"| {row['family']} | Keras `export(format=\"litert\")` [1, 128], no-cache "
                   "loop | "
                   f"{mb(e['bytes'])} | {e['bytes'] / base:.2f} | {e['step_s'] * 1e3:.0f} ms | "
                   f"{loop:.0f} | 1.0× | - | - | - |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / ".cache" / "llm")
    parser.add_argument("--families", default="gpt2,llama")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the models already built and converted in --out")
    args = parser.parse_args()
    families = args.families.split(",")
    start, load = time.perf_counter(), os.getloadavg()
    rows = []
    for family in families:
        rows.append(bench_model(family, args.out, args.new_tokens, args.runs, args.reuse))
        print(f"{family}: done at {time.perf_counter() - start:.0f} s", flush=True)
    tiny = tiny_agreement(args.out, families)
    print(table(rows, tiny))
    for row in rows:
        print(f"{row['family']}: {row['params'] / 1e6:.2f} M parameters; 4 targets converted "
              f"and verified by `freeze` in {row['convert_s']:.0f} s; Keras' export "
              f"{row['export']['export_s']:.0f} s; Keras' export of any length runs in "
              f"LiteRT's interpreter: {row['export']['runs_as_is']}")
    print(f"whole run {time.perf_counter() - start:.0f} s; load average at the start "
          f"{load[0]:.2f}, at the end {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "tiny": tiny, "load": load}, indent=1))


if __name__ == "__main__":
    main()
