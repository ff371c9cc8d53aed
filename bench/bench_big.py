"""A model over 2 GiB (issue 46): models/big.py's TF1 checkpoint (a 2.1 GiB embedding table and a
small head) built, then `freeze` commands on it timed with each one's peak RSS (its process and
its children, `wait4`'s ru_maxrss): inspect (with and without the converters' gaps), the refusal
of a target that cannot hold it, (--convert) the targets that can, and (--peers) the stock
converters on the SavedModel the server target writes: TFLiteConverter.from_saved_model (with
its buffer-offset mode), tf2onnx --large_model, openvino.convert_model (+ save_model).

    python bench/bench_big.py [--folder DIR] [--rows 4400000] [--repeat 3]
        [--convert server,onnx,tflite,openvino] [--peers]

Without --folder the model is built in a temporary folder (2.1 GiB on disk) and removed after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)


PEERS = {  # name -> script run on argv[1] (a SavedModel folder), writing into argv[2]
    "TFLiteConverter.from_saved_model (buffer offset)":
        "import sys, tensorflow as tf\n"
        "c = tf.lite.TFLiteConverter.from_saved_model(sys.argv[1])\n"
        "c._experimental_use_buffer_offset = True\n"
        "open(sys.argv[2] + '/peer.tflite', 'wb').write(c.convert())\n",
    "tf2onnx --saved-model --large_model":
        "import sys, runpy\n"
        "sys.argv = ['tf2onnx', '--saved-model', sys.argv[1], '--large_model', '--output', "
        "sys.argv[2] + '/peer.zip']\n"
        "runpy.run_module('tf2onnx.convert', run_name='__main__')\n",
    "openvino.convert_model + save_model":
        "import sys, openvino as ov\n"
        "ov.save_model(ov.convert_model(sys.argv[1]), sys.argv[2] + '/peer.xml', "
        "compress_to_fp16=False)\n",
}
TIMEOUT = 900  # s, a peer that takes longer is stopped and said so


def timed(args: list[str], cwd: str) -> tuple[float, float, int, str]:
    """(seconds, peak RSS MB of the process and its children, exit code, last stderr line)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    timer = threading.Timer(TIMEOUT, proc.kill)
    timer.start()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    took = time.perf_counter() - start
    lines = err.strip().splitlines()
    return took, usage.ru_maxrss / 1024, proc.returncode, lines[-1] if lines else ""


def peers(freeze: str, folder: str) -> list[tuple]:
    """Each stock converter on the SavedModel `freeze --target server` writes (not verified)."""
    out = tempfile.mkdtemp(prefix="bench_big_peers_")
    try:
        saved = os.path.join(out, "model.savedmodel")
        took, _, code, line = timed([freeze, "model.ckpt-1", "--outputs", "probs", "--target",
                                     "server", "--no-verify", "-o", saved], folder)
        assert code == 0, line
        rows = []
        for name, script in PEERS.items():
            written = tempfile.mkdtemp(dir=out)
            took, peak, code, line = timed([sys.executable, "-c", script, saved, written], out)
            rows.append((f"peer: {name}", took, peak,
                         "ok (not verified)" if code == 0 else
                         f"killed after {TIMEOUT} s" if code == -9 else
                         f"exit {code}: {line[:80]}"))
            shutil.rmtree(written, ignore_errors=True)
        return rows
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", help="an existing models/big.py output (else built)")
    parser.add_argument("--rows", type=int, default=4_400_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--convert", default="", help="targets to convert to, e.g. server")
    parser.add_argument("--peers", action="store_true",
                        help="the stock converters on the server target's SavedModel")
    args = parser.parse_args()
    temp = None if args.folder else tempfile.mkdtemp(prefix="bench_big_")
    folder = args.folder or os.path.join(temp, "big")
    rows = []
    try:
        if temp:
            took, peak, code, line = timed([sys.executable, os.path.join(HERE, "..", "models",
                                            "big.py"), folder, "--rows", str(args.rows)], temp)
            assert code == 0, line
            rows.append(("build (models/big.py)", took, peak, "ok"))
        data = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
        freeze = os.path.join(BIN, "freeze")
        runs = [("freeze inspect --no-gaps", [freeze, "inspect", "model.ckpt-1", "--no-gaps"]),
                ("freeze inspect", [freeze, "inspect", "model.ckpt-1"]),
                ("freeze --target android (refused)",
                 [freeze, "model.ckpt-1", "--outputs", "probs", "--target", "android"])]
        for name, command in runs:
            measured = [timed(command, folder) for _ in range(args.repeat)]
            rows.append((name, statistics.median(m[0] for m in measured),
                         max(m[1] for m in measured), f"exit {measured[0][2]}"))
        for target in filter(None, args.convert.split(",")):
            out = tempfile.mkdtemp(prefix="bench_big_out_")
            try:
                took, peak, code, line = timed([freeze, "model.ckpt-1", "--outputs", "probs",
                                                "--target", target, "-o", out + "/"], folder)
                rows.append((f"freeze --target {target}", took, peak,
                             "ok (verified)" if code == 0 else f"exit {code}: {line[:80]}"))
            finally:
                shutil.rmtree(out, ignore_errors=True)
        if args.peers:
            rows += peers(freeze, folder)
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    print(f"model: {data / 2**30:.2f} GiB of checkpoint files; median of {args.repeat} "
          "(inspect, refusal), peak RSS the largest")
    print("| command | seconds | peak RSS MB | x weights | result |")
    print("|---|---:|---:|---:|---|")
    for name, took, peak, result in rows:
        print(f"| {name} | {took:.2f} | {peak:.0f} | {peak * 2**20 / data:.2f} | {result} |")


if __name__ == "__main__":
    main()
