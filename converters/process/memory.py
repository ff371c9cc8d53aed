"""Keep peak memory near what the model needs: glibc returns freed tensor buffers to the OS.

By default glibc raises its mmap threshold after the first big free, so later weight-sized
buffers (1-32 MB) come from the heap and stay resident after they are freed; `malloc_trim`
between stages hands them back. A no-op where glibc is absent.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

_libc = None


def _glibc():
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.malloc_trim  # noqa: B018 -- glibc only
        except (OSError, AttributeError):
            _libc = False
    return _libc


def settle() -> None:
    """Move everything alive now (TensorFlow's modules: ~1M objects) out of the collector's
    sight, so each later `release()` scans only what the run created."""
    gc.collect()
    gc.freeze()


def release() -> None:
    """Collect cycles (tf.Graph objects hold some) and give freed heap memory back to the OS."""
    gc.collect()
    libc = _glibc()
    if libc:
        libc.malloc_trim(0)
