"""Where cache entries live. An entry is `FOLDER/KK/KEY/`: `entry.json` (the key, the job, what
each target wrote, every file's sha256 and size, and the folder holding the files) and the files.

- Local folders (and ram://): the entry is written as a temporary tree renamed into place
  (atomic); "last used" is entry.json's mtime, set on a hit.
- gs://: objects cannot be renamed, so the files go first, under `KK/KEY/files-DIGEST/` (DIGEST:
  of the files' sha256s, so two machines writing the same entry write the same bytes to the same
  names), and `entry.json` is published last, in one request: an entry is visible only once
  complete. "Last used" is the server's time of a small `used` object written on a hit (in the
  background). A reader checks every file's sha256, so a damaged or half-replaced entry is a
  miss, rebuilt and published again, never served. No TensorFlow (cache_gcs.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from graphfreeze.errors import GraphFreezeError, OutputError
from graphfreeze.io import storage

ENTRY, USED = "entry.json", "used"
_BACKGROUND = ThreadPoolExecutor(max_workers=4, thread_name_prefix="graphfreeze-cache")


def record_of(key: str, files: dict[str, bytes], written, job: str | None, stage: str,
              seconds: float | None = None) -> dict:
    """entry.json; `seconds`: the time the job took to make the files (reports of a hit show it)."""
    return {"key": key, "written": [list(w) for w in written], "job": job,
            "targets": [w[0] for w in written], "stage": stage,
            "files": {rel: hashlib.sha256(d).hexdigest() for rel, d in files.items()},
            "sizes": {rel: len(d) for rel, d in files.items()},
            **({"seconds": round(seconds, 3)} if seconds is not None else {})}


def check_record(record: dict, key: str) -> bool:
    """The record is this key's and names every file its targets wrote."""
    tops = {rel.split("/")[0] for rel in record["files"]}
    return record.get("key") == key and all(name in tops for w in record["written"]
                                            for name in w[1:])


def verified(files: dict[str, bytes], record: dict) -> bool:
    return set(files) == set(record["files"]) and all(
        hashlib.sha256(data).hexdigest() == record["files"][rel] for rel, data in files.items())


def unwritable(what: str, why: str) -> OutputError:
    return OutputError(f"--cache {what}: {why}; choose another --cache, or --no-cache")


class FileStore:
    """A local folder, or any other path storage handles (ram://)."""

    def __init__(self, folder: str):
        self.folder = folder

    def entry(self, key: str) -> str:
        return storage.join(self.folder, key[:2], key)

    def check_writable(self) -> None:
        """Before any job runs: the folder (or the nearest existing parent) can be written."""
        if storage.is_remote(self.folder):
            return
        probe = self.folder.rstrip("/") or "/"
        while not os.path.exists(probe):  # spelled as the user wrote it
            probe = os.path.dirname(probe) or "."
        if not os.path.isdir(probe):
            raise unwritable(self.folder, "is a file, not a folder" if probe == self.folder
                             else f"{probe} is a file, not a folder")
        if not os.access(probe, os.W_OK | os.X_OK) or _read_only(probe):
            why = "is on a read-only file system" if _read_only(probe) else "is not writable"
            raise unwritable(self.folder, why if probe == self.folder.rstrip("/")
                             else f"{probe} {why}")
        try:  # os.access trusts root; some file systems (sysfs, a FUSE mount) refuse anyway
            os.rmdir(tempfile.mkdtemp(prefix=".graphfreeze-probe-", dir=probe))
        except OSError as err:
            why = f"is not writable ({err.strerror})"
            raise unwritable(self.folder, why if probe == self.folder.rstrip("/")
                             else f"{probe} {why}") from err

    def load(self, key: str) -> tuple[dict, dict[str, bytes]] | None:
        entry = self.entry(key)
        record = json.loads(storage.read_bytes(storage.join(entry, ENTRY)))
        if not check_record(record, key):
            return None
        stage = storage.join(entry, record.get("stage") or "files")
        files = {rel: storage.read_bytes(storage.join(stage, rel)) for rel in record["files"]}
        return record, files

    def touch(self, key: str) -> None:
        if not storage.is_remote(self.folder):
            try:
                os.utime(os.path.join(self.entry(key), ENTRY))
            except OSError:
                pass

    def store(self, key: str, files: dict[str, bytes], written, job: str | None,
              seconds: float | None = None) -> None:
        entry = self.entry(key)
        record = record_of(key, files, written, job, "files", seconds)
        with storage.Transaction(force=True) as txn:
            (tmp,) = txn.workdir([entry])
            for rel, data in files.items():
                path = os.path.join(tmp, "files", *rel.split("/"))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
            with open(os.path.join(tmp, ENTRY), "w") as f:
                json.dump(record, f, sort_keys=True, indent=1)
            txn.commit()


class GcsStore:
    """gs://BUCKET/PREFIX through cache_gcs.Client."""

    def __init__(self, folder: str, client=None):
        from graphfreeze.batch import cache_gcs

        self.folder = folder.rstrip("/")
        self.bucket, self.prefix = cache_gcs.split(self.folder)
        self.client = client or cache_gcs.Client()
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="graphfreeze-gcs")

    def name(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def entry(self, key: str) -> str:
        return self.name(key[:2], key)

    def check_writable(self) -> None:
        """A probe object written and removed: a missing bucket, no credentials or no permission
        is one line before any job runs."""
        from graphfreeze.io.temporaries import temp_name

        probe = self.name(temp_name("writable"))
        try:
            self.client.write(self.bucket, probe, b"graphfreeze cache probe\n")
            self.client.delete(self.bucket, probe)
        except GraphFreezeError as err:
            raise unwritable(self.folder, f"cannot write there ({err})") from err

    def load(self, key: str) -> tuple[dict, dict[str, bytes]] | None:
        entry = self.entry(key)
        data = self.client.read(self.bucket, f"{entry}/{ENTRY}")
        if data is None:
            return None
        record = json.loads(data)
        if not check_record(record, key) or not str(record.get("stage", "")).startswith("files-"):
            return None
        names = list(record["files"])
        blobs = list(self._pool.map(
            lambda rel: self.client.read(self.bucket, f"{entry}/{record['stage']}/{rel}"), names))
        if any(b is None for b in blobs):
            return None
        return record, dict(zip(names, blobs, strict=True))

    def touch(self, key: str) -> None:
        """Mark the entry used (server time), in the background; waited for at exit."""
        name = f"{self.entry(key)}/{USED}"
        _BACKGROUND.submit(_quietly, self.client.write, self.bucket, name, b"%d\n" % time.time())

    def store(self, key: str, files: dict[str, bytes], written, job: str | None,
              seconds: float | None = None) -> None:
        entry = self.entry(key)
        digests = json.dumps({rel: hashlib.sha256(d).hexdigest() for rel, d in files.items()},
                             sort_keys=True)
        stage = "files-" + hashlib.sha256(digests.encode()).hexdigest()[:20]
        record = record_of(key, files, written, job, stage, seconds)
        list(self._pool.map(lambda item: self.client.write(
            self.bucket, f"{entry}/{stage}/{item[0]}", item[1]), files.items()))
        self.client.write(self.bucket, f"{entry}/{ENTRY}",  # published last: now visible
                          json.dumps(record, sort_keys=True, indent=1).encode())
        self.touch(key)


def _quietly(func, *args) -> None:
    try:
        func(*args)
    except Exception:  # noqa: BLE001 -- a last-used mark is best effort
        pass


def _read_only(folder: str) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def open_store(folder: str):
    return GcsStore(folder) if folder.startswith("gs://") else FileStore(folder)
