"""`freeze cache ls` and `freeze cache prune`: the entries of a local or gs:// cache (key, job,
targets, size, last used) and removing the least recently used ones. No TensorFlow.

An entry is removed by unpublishing it first (its entry.json: a directory renamed aside locally,
the object deleted on gs://), then its files, so a concurrent reader sees a whole entry or a miss.
On gs://, what a writer killed mid-way left (files with no entry.json, files of an older
version of the entry) is counted as `incomplete` and pruned once an hour old.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from collections.abc import Callable

from graphfreeze.batch.cache_store import ENTRY, USED, open_store
from graphfreeze.errors import ConfigError

STALE_PARTS = 3600.0  # seconds: a writer this slow is dead
_KEY = re.compile(r"^[0-9a-f]{64}$")
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2,
          "mib": 1024 ** 2, "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3, "t": 1024 ** 4,
          "tb": 1024 ** 4, "tib": 1024 ** 4}
_AGES = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclasses.dataclass
class Entry:
    key: str
    job: str | None
    targets: list[str]
    size: int  # bytes, every file of the entry (incomplete parts included)
    last_used: float  # epoch seconds
    complete: bool = True
    parts: list[str] = dataclasses.field(default_factory=list)  # gs://: object names


def parse_size(text: str, flag: str = "--max-size") -> int:
    """`10GB`, `500MB`, `1.5G`, `2GiB`, `2048` (bytes; K/M/G/T are 1024-based, as sizes are
    shown): `freeze cache prune --max-size`, `freeze batch --max-memory`."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match and match.group(2).lower()
    if not match or unit not in _UNITS:
        raise ConfigError(f"{flag} {text}: not a size; use e.g. 10GB, 500MB or 2048 (bytes)")
    return int(float(match.group(1)) * _UNITS[unit])


def parse_age(text: str) -> float:
    """`30d`, `12h`, `2w`, `90m`, `45s` -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*", text)
    unit = match and match.group(2).lower()
    if not match or unit not in _AGES:
        raise ConfigError(f"--older-than {text}: not an age; use e.g. 30d, 12h, 2w or 90m")
    return float(match.group(1)) * _AGES[unit]


def folder_of(cache: str | None) -> str:
    """The cache a command names (`~` expanded), or the default one."""
    from graphfreeze.batch.cache import default_dir
    from graphfreeze.io import paths

    return paths.expand(cache) if cache else default_dir()


def entries(folder: str) -> list[Entry]:
    """Every entry of the cache at `folder`, least recently used first."""
    if folder.startswith("gs://"):
        found = _gcs_entries(open_store(folder))
    elif "://" in folder:
        raise ConfigError(f"{folder}: `freeze cache` reads local folders and gs:// caches only")
    else:
        found = _local_entries(folder)
    return sorted(found, key=lambda e: (e.last_used, e.key))


def _local_entries(folder: str) -> list[Entry]:
    if not os.path.isdir(folder):
        raise ConfigError(f"{folder}: no cache there (not a folder)")
    out = []
    for shard in sorted(os.listdir(folder)):
        base = os.path.join(folder, shard)
        if len(shard) != 2 or not os.path.isdir(base):
            continue
        for key in sorted(os.listdir(base)):
            entry = os.path.join(base, key)
            if not _KEY.match(key) or not os.path.isdir(entry):
                continue
            size = sum(os.path.getsize(os.path.join(root, n)) for root, _, names in os.walk(entry)
                       for n in names if not os.path.islink(os.path.join(root, n)))
            try:
                with open(os.path.join(entry, ENTRY), "rb") as f:
                    described = _described(json.loads(f.read()))
                used = os.path.getmtime(os.path.join(entry, ENTRY))
            except (OSError, ValueError):
                described = None
            if described is None:
                out.append(Entry(key, None, [], size, os.path.getmtime(entry), complete=False))
            else:
                out.append(Entry(key, *described, size, used))
    return out


def _gcs_entries(store) -> list[Entry]:
    prefix = store.name() + "/" if store.prefix else ""
    groups: dict[str, list[dict]] = {}
    for item in store.client.list(store.bucket, prefix):
        parts = item["name"][len(prefix):].split("/")
        if len(parts) >= 3 and len(parts[0]) == 2 and _KEY.match(parts[1]):
            groups.setdefault(parts[1], []).append(item)
    records = dict(zip(groups, store._pool.map(
        lambda key: store.client.read(store.bucket, f"{store.entry(key)}/{ENTRY}"), groups),
        strict=True))
    out = []
    for key, items in groups.items():
        by_name = {i["name"][len(store.entry(key)) + 1:]: i for i in items}
        try:
            record = json.loads(records[key])
            stage = record["stage"]
            described = _described(record)
        except (TypeError, ValueError, KeyError):
            record, stage, described = None, None, None
        used = max((by_name[n]["updated"] for n in (USED, ENTRY) if n in by_name),
                   default=max(i["updated"] for i in items))
        stray = [i for n, i in by_name.items() if n not in (USED, ENTRY)
                 and n.split("/")[0] != stage]
        size = sum(i["size"] for i in items)
        if described is None:
            out.append(Entry(key, None, [], size, used, False, [i["name"] for i in items]))
            continue
        out.append(Entry(key, *described, size, used, True,
                         [i["name"] for i in stray if i["updated"] < time.time() - STALE_PARTS]))
    return out


def _described(record) -> tuple[str | None, list[str]] | None:
    """(job, targets) an entry.json names, or None when it is not one (then incomplete)."""
    try:
        targets = record.get("targets") or [w[0] for w in record["written"]]
        job = record.get("job")
        return (None if job is None else str(job)), [str(t) for t in targets]
    except (AttributeError, KeyError, TypeError, IndexError):
        return None


def choose(found: list[Entry], max_size: int | None = None, older_than: float | None = None,
           now: float | None = None) -> list[Entry]:
    """What prune removes: entries not used within `older_than` seconds, then the least
    recently used until the rest fit in `max_size` bytes; and incomplete entries an hour old."""
    now = time.time() if now is None else now
    gone = [e for e in found if not e.complete and e.last_used < now - STALE_PARTS
            or older_than is not None and e.last_used < now - older_than]
    if max_size is not None:
        keys = {e.key for e in gone}
        left = sum(e.size for e in found if e.key not in keys)
        for entry in found:  # least recently used first
            if left <= max_size:
                break
            if entry.key not in keys:
                gone.append(entry)
                left -= entry.size
    return gone


@dataclasses.dataclass
class Pruned:
    """What `prune` removed (or, dry, would remove) and what is left, least recently used first."""

    gone: list[Entry]
    kept: list[Entry]


def prune(folder: str, max_size: int | None = None, older_than: float | None = None,
          dry_run: bool = False, now: float | None = None,
          on_gone: Callable[[Entry], object] = lambda entry: None) -> Pruned:
    """Remove what `choose` picks from the cache at `folder` (`on_gone(entry)` after each), then
    complete entries' leftover parts (gs://); with `dry_run`, remove nothing."""
    found = entries(folder)
    gone = choose(found, max_size, older_than, now)
    for entry in gone:
        if not dry_run:
            remove(folder, entry)
        on_gone(entry)
    keys = {e.key for e in gone}
    kept = [e for e in found if e.key not in keys]
    for entry in kept:
        if entry.parts and not dry_run:
            remove_stray(folder, entry)
    return Pruned(gone, kept)


def remove(folder: str, entry: Entry) -> None:
    """Unpublish, then delete (see the module docstring)."""
    if folder.startswith("gs://"):
        store = open_store(folder)
        base = store.entry(entry.key)
        store.client.delete(store.bucket, f"{base}/{ENTRY}")
        names = [i["name"] for i in store.client.list(store.bucket, base + "/")]
        list(store._pool.map(lambda n: store.client.delete(store.bucket, n), names))
        return
    path = os.path.join(folder, entry.key[:2], entry.key)
    aside = os.path.join(folder, entry.key[:2], f".{entry.key}.pruned.{os.getpid()}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def remove_stray(folder: str, entry: Entry) -> None:
    """gs://: a complete entry's leftover parts (an older version's files)."""
    store = open_store(folder)
    list(store._pool.map(lambda n: store.client.delete(store.bucket, n), entry.parts))
