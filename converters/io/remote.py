"""Remote paths (`gs://`, `ram://`, through `tf.io.gfile`): a call that cannot reach its bucket
is one line naming the path, and whole trees uploaded."""

from __future__ import annotations

import os

from graphfreeze.errors import InputError, first_line
from graphfreeze.io.paths import gfile as _gfile
from graphfreeze.io.paths import join


def reached(path: str, call):
    """`call()` on remote `path`; a path naming no bucket, or a bucket the network, the
    credentials or the name keep out of reach, is an InputError naming `path`."""
    scheme, _, rest = path.partition("://")
    if not rest.split("/")[0]:
        raise InputError(f"{path}: names no bucket; give {scheme}://BUCKET/PATH")
    try:
        return call()
    except Exception as err:  # tf.errors.*: no network, no credentials, no such bucket
        raise InputError(f"{path}: cannot reach it ({first_line(err)}); check the bucket's name, "
                         "the network and your Google Cloud credentials") from err


def upload(local: str, remote: str) -> None:
    """Copy a local file or directory tree to a remote path (no parent directory needed); a
    directory's old objects that the new tree lacks are removed."""
    gfile = _gfile()
    if not os.path.isdir(local):
        gfile.copy(local, remote, overwrite=True)
        return
    new = set()
    for root, _, names in os.walk(local):
        rel = os.path.relpath(root, local)
        target = remote if rel == "." else join(remote, *rel.split(os.sep))
        for name in names:
            new.add(join(target, name))
            gfile.copy(os.path.join(root, name), join(target, name), overwrite=True)
    for root, _, names in gfile.walk(remote):
        for name in names:
            if join(root, name) not in new:
                gfile.remove(join(root, name))
