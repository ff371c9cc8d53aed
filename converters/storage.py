"""All file I/O, through `tf.io.gfile` so `gs://`, `ram://` and local paths all work.

Writes are atomic: each file goes to a temporary sibling first and is renamed into place only
when every file of the batch is written, so an interrupted run never leaves a half-written model.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
import uuid

from graphfreeze.errors import GraphFreezeError, InputError, OutputError, first_line


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def is_remote(path: str) -> bool:
    return "://" in path


def join(*parts: str) -> str:
    return posixpath.join(*parts) if is_remote(parts[0]) else os.path.join(*parts)


def dirname(path: str) -> str:
    return posixpath.dirname(path) if is_remote(path) else os.path.dirname(path)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_remote(path) else os.path.basename(path)


def expand(path: str | None) -> str | None:
    """A path as the user meant it: `~` expanded for local paths; anything else kept as typed
    (relative paths stay relative, so messages and artifact names read as the user wrote them)."""
    return path if path is None or is_remote(path) else os.path.expanduser(path)


def glob(prefix: str, pattern: str) -> list[str]:
    """Sorted files named `prefix` + `pattern` (a literal prefix, a glob pattern), spelled like the
    prefix: TensorFlow's glob answers `model.ckpt*` with `./model.ckpt...`, so a bare relative
    prefix would not match its own files."""
    if is_remote(prefix):
        return sorted(_gfile().glob(prefix + pattern))
    import glob as _glob

    return sorted(_glob.glob(_glob.escape(prefix) + pattern))


def exists(path: str) -> bool:
    if not is_remote(path):
        return os.path.exists(path)
    return _gfile().exists(path)


def isdir(path: str) -> bool:
    if not is_remote(path):
        return os.path.isdir(path)
    return _gfile().isdir(path)


def listdir(path: str) -> list[str]:
    return sorted(_gfile().listdir(path))


def size(path: str) -> int:
    return _gfile().stat(path).length


def read_bytes(path: str) -> bytes:
    """Read a whole file; a missing or unreadable file is an InputError naming it."""
    if not exists(path):
        raise InputError(f"{path}: file not found; check the path")
    try:
        with _gfile().GFile(path, "rb") as f:
            return f.read()
    except Exception as err:  # tf.errors.* for remote filesystems
        raise InputError(f"{path}: cannot read ({first_line(err)})") from err


def check_writable(paths: list[str], force: bool) -> None:
    """Refuse before any work starts: an existing output without force, or an unusable parent."""
    for path in paths:
        if exists(path) and not force:
            raise OutputError(f"{path}: already exists; pass --force to overwrite it")
        parent = dirname(path) or "."
        if is_remote(path):
            continue  # object stores have no real directories; nothing to check
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise OutputError(f"{path}: parent {parent} is a file, not a directory; choose another -o")
        probe = parent
        while not os.path.exists(probe):
            probe = os.path.dirname(probe) or "."
        if not os.access(probe, os.W_OK | os.X_OK):
            raise OutputError(f"{path}: directory {probe} is not writable; choose another -o")


class Batch:
    """Files written to temporary siblings as they are made, renamed into place together.

        with Batch(force) as batch:
            batch.stage(path, data)            # a file, now in a temporary sibling
            tmp_a, tmp_b = batch.workdir([a, b])  # or: where to write a and b (files or
            ...                                   #     dirs), siblings in one temporary dir
            batch.commit()                     # all renames; on an exception, temporaries removed
    """

    def __init__(self, force: bool):
        self.force = force
        self.temps: dict[str, str] = {}  # final path -> temporary path
        self.dirs: list[str] = []  # temporary directories, removed at the end

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

    def stage(self, path: str, data) -> None:
        """Write `data` (bytes, or an iterable of byte chunks) to a temporary sibling of path."""
        check_writable([path], self.force)
        parent = dirname(path)
        tmp = join(parent or ".", f".{basename(path)}.tmp-{uuid.uuid4().hex[:8]}")
        try:
            if parent and not is_remote(path):
                os.makedirs(parent, exist_ok=True)
            self.temps[path] = tmp
            with _gfile().GFile(tmp, "wb") as f:
                for chunk in [data] if isinstance(data, bytes) else data:
                    f.write(chunk)
        except GraphFreezeError:
            raise
        except Exception as err:
            raise OutputError(f"{path}: cannot write ({first_line(err)})") from err

    def workdir(self, paths: list[str]) -> list[str]:
        """Where to write each of `paths` (files or directories): siblings in one local temporary
        directory, moved into place at commit -- beside paths[0] for local paths (a rename), in
        the system temp dir for remote ones (an upload). Paths must share one parent."""
        check_writable(paths, self.force)
        parent = dirname(paths[0])
        name = f".{basename(paths[0])}.tmp-{uuid.uuid4().hex[:8]}"
        tmp = os.path.join(tempfile.gettempdir(), name) if is_remote(paths[0]) else \
            join(parent or ".", name)
        try:
            os.makedirs(tmp)
        except Exception as err:
            raise OutputError(f"{paths[0]}: cannot write ({first_line(err)})") from err
        self.dirs.append(tmp)
        for path in paths:
            self.temps[path] = join(tmp, basename(path))
        return [self.temps[path] for path in paths]

    def commit(self) -> None:
        gfile = _gfile()
        try:
            for path, tmp in list(self.temps.items()):
                if not gfile.exists(tmp):
                    raise OutputError(f"{path}: was never written; report this as a graphfreeze bug")
                if is_remote(path) and not is_remote(tmp):
                    _upload(tmp, path)
                elif gfile.isdir(tmp):
                    if gfile.exists(path):
                        gfile.rmtree(path)  # check_writable refused it unless --force
                    gfile.rename(tmp, path)
                else:
                    gfile.rename(tmp, path, overwrite=True)
                del self.temps[path]
        except GraphFreezeError:
            raise
        except Exception as err:
            raise OutputError(f"{path}: cannot write ({first_line(err)})") from err
        self.discard()

    def discard(self) -> None:
        gfile = _gfile()
        for tmp in [*self.temps.values(), *self.dirs]:
            try:
                if gfile.isdir(tmp):
                    gfile.rmtree(tmp)
                elif gfile.exists(tmp):
                    gfile.remove(tmp)
            except Exception:  # best effort: never hide the error that got us here
                pass
        self.temps.clear()
        self.dirs.clear()


def _upload(local: str, remote: str) -> None:
    """Copy a local file or directory tree to a remote path (no parent directory needed)."""
    gfile = _gfile()
    if not os.path.isdir(local):
        gfile.copy(local, remote, overwrite=True)
        return
    for root, _, names in os.walk(local):
        rel = os.path.relpath(root, local)
        target = remote if rel == "." else join(remote, *rel.split(os.sep))
        for name in names:
            gfile.copy(os.path.join(root, name), join(target, name), overwrite=True)


def tree_digest(path: str) -> tuple[str, int]:
    """(sha256, bytes) of a file, or of a directory's files (relative names and contents)."""
    import hashlib

    gfile = _gfile()
    digest, total = hashlib.sha256(), 0
    files = [(path, "")] if not gfile.isdir(path) else [
        (join(root, name), join(root, name)[len(path):].lstrip("/"))
        for root, _, names in sorted(gfile.walk(path)) for name in sorted(names)]
    for full, rel in files:
        if rel:
            digest.update(rel.encode() + b"\0")
        with gfile.GFile(full, "rb") as f:
            while chunk := f.read(1 << 22):
                digest.update(chunk)
                total += len(chunk)
    return digest.hexdigest(), total


def write_files(files: dict[str, bytes], force: bool) -> None:
    """Write several files atomically as a batch."""
    check_writable(list(files), force)
    with Batch(force) as batch:
        for path, data in files.items():
            batch.stage(path, data)
        batch.commit()
