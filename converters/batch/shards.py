"""Shards of a batch (`--shard K/N`): which jobs a CI machine runs. Imports nothing of the run
(the baseline's comparison reads shards too)."""

from __future__ import annotations

import hashlib

from graphfreeze.errors import ConfigError


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N), 1 <= K <= N."""
    k, sep, n = text.partition("/")
    if not sep or not (k + n).isascii() or not k.isdigit() or not n.isdigit() or \
            not 1 <= int(k) <= int(n):
        raise ConfigError(f"--shard {text}: write it as K/N with 1 <= K <= N, e.g. 1/4")
    return int(k), int(n)


def in_shard(name: str, shard: tuple[int, int]) -> bool:
    """Whether job `name` belongs to shard K of N: by a hash of the name, so the split is
    stable when jobs are added or reordered, with no overlap and no gap."""
    k, n = shard
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % n == k - 1
