"""Files and directory trees read whole: their files in a stable order, and their digests."""

from __future__ import annotations

import os

from graphfreeze.io.paths import gfile as _gfile
from graphfreeze.io.paths import is_remote, join


def tree_digest(path: str) -> tuple[str, int]:
    """(sha256, bytes) of a file, or of a directory's files (relative names and contents)."""
    import hashlib

    digest, total = hashlib.sha256(), 0
    for full, rel in tree_files(path):
        if rel:
            digest.update(rel.encode() + b"\0")
        with _open(full) as f:
            while chunk := f.read(1 << 22):
                digest.update(chunk)
                total += len(chunk)
    return digest.hexdigest(), total


def artifact_digest(parts: list[str]) -> tuple[str, int]:
    """(sha256, bytes) of an artifact made of `parts` (`Format.parts`): one file's or
    directory's `tree_digest`; for several files (`.xml` + `.bin`, `.onnx` + `.onnx.data`) the
    sha256 of each one's base name and digest, in order. What export writes in the sidecar and
    `freeze verify` checks."""
    if len(parts) == 1:
        return tree_digest(parts[0])
    import hashlib

    digest, total = hashlib.sha256(), 0
    for part in parts:
        part_digest, size = tree_digest(part)
        digest.update(f"{part.replace(os.sep, '/').rsplit('/', 1)[-1]}\0{part_digest}\n".encode())
        total += size
    return digest.hexdigest(), total


def tree_files(path: str) -> list[tuple[str, str]]:
    """[(full path, path relative to `path`)] of a file ("" relative) or a directory's files,
    sorted, "/"-separated."""
    if not (_gfile().isdir(path) if is_remote(path) else os.path.isdir(path)):
        return [(path, "")]
    walk = _gfile().walk(path) if is_remote(path) else os.walk(path)
    found = []
    for root, _, names in walk:
        for name in names:
            full = join(root, name)
            found.append((full, full[len(path):].replace(os.sep, "/").lstrip("/")))
    return sorted(found, key=lambda item: item[1])


def _open(path: str):
    return _gfile().GFile(path, "rb") if is_remote(path) else open(path, "rb")
