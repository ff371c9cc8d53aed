"""A batch job's memory: estimated from its model's size before it starts (what `--max-memory`
budgets and Ray's `memory` resource reserves), and measured as its worker's peak RSS."""

from __future__ import annotations

import os

from graphfreeze.errors import ConfigError

# a worker with TensorFlow imported, before any model (bench/README: workers' VmHWM 692-734 MB)
WORKER_BYTES = 750 << 20
# peak RSS per byte of weights beyond a worker's, by target: (weights up to APART_FROM, past
# it), measured on models/big.py's checkpoint (bench/README, "Issue 46": 0.48 GiB and 2.1 GiB,
# rounded up). Up to the exports' `apart_bytes` every converter takes the whole graph; past it,
# the writers that hold weights apart take ~1x (quantizing targets are refused there, android
# past 2 GiB)
FACTORS = {"android": (3.0, 3.0), "server": (2.0, 1.4), "tflite": (11.0, 1.4),
           "onnx": (8.0, 1.4), "openvino": (6.0, 1.4), "tflite-fp16": (12.5, 12.5),
           "tflite-dynamic": (12.5, 12.5), "edge-int8": (12.5, 12.5), "onnx-fp16": (10.0, 10.0),
           "onnx-int8": (8.0, 8.0)}
OTHERS = 12.5  # a target not measured: the largest measured
# a worker sends its artifacts back as bytes: each read whole, then pickled (twice its size, as
# big as the weights for a float target): server on the 2.1 GiB model peaked at 4.76 GiB in a
# worker (2.78 GB alone), 1.4x would have said 3.67
SENT = 2.0
APART_FROM = 1 << 30  # the exports' `apart_bytes`


def estimate(prepared) -> int:
    """The bytes a job (convert.Prepared) is expected to peak at: its worker's, plus its
    weights (`Source.weight_bytes`; else its source's files) times its hungriest target's
    factor, or the artifacts' bytes sent back (SENT per target), the larger."""
    request = prepared.request
    weights = prepared.source.weight_bytes(request.source, prepared.source_options,
                                           request.outputs, request.inputs) \
        if request.outputs else None
    if weights is None:
        weights = source_bytes(prepared) or 0
    past = weights > APART_FROM
    factor = max((FACTORS[t][past] if t in FACTORS else OTHERS for t in request.targets),
                 default=OTHERS)
    factor = max(factor, SENT * len(request.targets))
    return WORKER_BYTES + int(weights * factor)


def source_bytes(prepared) -> int | None:
    """The size of the files a local source's load reads (convert.Prepared's: the reports chart
    it against the artifacts); None for a remote source (no round trip for a chart) or one not
    found."""
    from graphfreeze.errors import GraphFreezeError
    from graphfreeze.io import storage

    if storage.is_remote(prepared.request.source):
        return None
    try:
        files = prepared.source.files(prepared.request.source, prepared.source_options)
        return sum(os.path.getsize(f) for f in files)
    except (GraphFreezeError, OSError):
        return None


def available() -> int | None:
    """What this machine has for jobs: MemAvailable (/proc/meminfo), else the free pages."""
    found = _proc("/proc/meminfo", "MemAvailable")
    if found is not None:
        return found
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def shown(size: int) -> str:
    """`2.9 GB`, `512 MB` (powers of 1024, as --max-memory takes them)."""
    return f"{size / 2**30:.1f} GB" if size >= 1 << 30 else f"{size / 2**20:.0f} MB"


def check(estimates: dict[str, int], budget: int, where: dict[str, str], given: bool) -> None:
    """One ConfigError naming the first job whose estimate is over the whole `budget`."""
    for name, size in estimates.items():
        if size > budget:
            said = f"--max-memory {shown(budget)}" if given else \
                f"the {shown(budget)} this machine has available (--max-memory)"
            raise ConfigError(f"{where[name]}: {name}: needs about {shown(size)} (estimated "
                              f"from its model's size), over {said}; give a larger "
                              "--max-memory, or run it where there is more memory")


def reset_peak() -> None:
    """Start this process's peak RSS (VmHWM) from its RSS now (Linux; elsewhere a no-op)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak() -> int | None:
    """This process's peak RSS since `reset_peak` (VmHWM; elsewhere its life's, ru_maxrss)."""
    found = _proc("/proc/self/status", "VmHWM")
    if found is not None:
        return found
    try:
        import resource
        import sys

        most = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except (ImportError, OSError):
        return None
    return most if sys.platform == "darwin" else most << 10  # (bytes there, KiB here)


def _proc(path: str, key: str) -> int | None:
    """The bytes of `key`'s line (`VmHWM:   1234 kB`) in a /proc file; None without /proc."""
    try:
        with open(path) as f:
            return next((int(line.split()[1]) << 10 for line in f
                         if line.startswith(key + ":")), None)
    except OSError:
        return None
